/* `c` (k9s's copy): the selected row's whole id to the terminal's
 * clipboard with OSC 52, and on the flash line too, whole, for a terminal
 * that does not allow OSC 52 (tmux without set-clipboard, most serial
 * consoles): the operator selects it there. */
#include "app.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void app_copy(struct app *a, const char *what, const char *text)
{
	if (!text || !*text) {
		app_flash(a, C_WARN, "nothing to copy here");
		return;
	}
	/* Only what a row holds is sent, and it is ids and digests: still,
	 * never a control byte inside the sequence (base64 has none). */
	if (!a->opt.no_display && isatty(STDOUT_FILENO)) {
		char *b64 = wire_base64_encode(text, strlen(text), true);
		if (b64) {
			char seq[512];
			int n = snprintf(seq, sizeof seq, "\033]52;c;%s\a", b64);
			if (n > 0 && (size_t)n < sizeof seq && write(STDOUT_FILENO, seq, (size_t)n) < 0) {
				/* the flash below still shows it */
			}
			free(b64);
		}
	}
	app_flash(a, C_GOOD, "copied %s%s%s", what, *what ? " " : "", text);
}
