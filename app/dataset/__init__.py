"""File > New Dataset from Images…: the dialog, its worker thread, and Use with This Net."""
