-- Migration 3 (stream): a record keeps a cell's whole answered output up to
-- the store's cap per stream (BH_STORE_OUTPUT_CAP, 256 KiB), no longer a
-- 4 KiB prefix, in the same columns (stdout_prefix, stderr_prefix), and says
-- in its flags when the store cut it (stored_stdout_truncated,
-- stored_stderr_truncated: apart from the cell's own stdout_truncated). A
-- row stored before kept at most 4096 bytes: one that holds that many was
-- likely cut, and says so now. No column changes, so a store this migration
-- has not reached reads the same as before.
UPDATE records SET flags = CASE flags WHEN '' THEN 'stored_stdout_truncated'
                       ELSE flags || ',stored_stdout_truncated' END
 WHERE length(stdout_prefix) >= 4096;
UPDATE records SET flags = CASE flags WHEN '' THEN 'stored_stderr_truncated'
                       ELSE flags || ',stored_stderr_truncated' END
 WHERE length(stderr_prefix) >= 4096;
