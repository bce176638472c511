"""Programs written as users write them, in files of their own (tests/ is no installed package, so their
frames are the user's): tests/test_user_line.py."""
