/* The screen tests' one comparison (tests/tui: test_console.c,
 * test_replay.c, test_presenter.c): a saved screen, already normalised by
 * its suite (each masks what varies in what it shows: directories, digests,
 * times), against EXPECTED_DIR/NAME.txt, whole.
 *
 * BH_TUI_UPDATE set and not empty: the expected file is written instead —
 * read every one by eye before committing it. A mismatch leaves the screen
 * got in $BULKHEAD_TEST_ROOT/tui-actual/NAME.txt and fails the test with a
 * diff against the expected one. No engine, no curses: test_replay links it
 * with nothing but the scenario library. */
#ifndef BH_TEST_SCREEN_COMPARE_H
#define BH_TEST_SCREEN_COMPARE_H

/* Compares (or, updating, writes) the screen; takes got and frees it. */
void screen_compare(const char *expected_dir, const char *name, char *got);

/* A file's whole text (caller frees), or NULL when it cannot be read. */
char *screen_slurp(const char *path);

#endif
