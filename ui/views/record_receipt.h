/* The record view opened on a record in hand rather than looked up in a
 * source (record.c): the replay player's receipt of a recorded call. */
#ifndef BH_UI_RECORD_RECEIPT_H
#define BH_UI_RECORD_RECEIPT_H

#include "app.h"

/* Pushes the view: r's fields, its digest recomputed and compared. */
void record_view_open_receipt(struct app *a, const struct ui_record *r);

#endif
