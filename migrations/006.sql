-- Schema 5 -> 6: a poll cursor knows which log file its line count counts in.
--
-- cursors.log_file: a log deleted while its task ran is started again in a
-- new file, numbered from 1, whose first line says what was lost. A cursor
-- holding only a line count went on at its old place in the new file: a poll
-- skipped the note and as many new lines as it had shown before. Now each
-- move of a cursor records the file it counted in (its inode; NULL: not
-- known, a cursor stored before), and a poll that finds another file at the
-- log's path starts that file from its first line.
--
-- Written to run on any database of version 5, also one set back by hand:
-- db.c skips an ADD COLUMN of a column already there.
ALTER TABLE cursors ADD COLUMN log_file INTEGER;

PRAGMA user_version = 6;
