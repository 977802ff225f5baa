-- UNIQUE keys the duplicate check walks that hold no duplicate: NULLs (never equal in a UNIQUE key), a composite
-- key whose first column repeats, and values that differ only past a case-insensitive collation's notice in
-- another column. Read in chunks of 3 rows, so groups of equal first columns straddle chunk borders.
CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10) COLLATE utf8mb4_general_ci, b VARCHAR(10) COLLATE utf8mb4_general_ci, c CHAR(3) COLLATE latin1_general_ci NOT NULL,
  UNIQUE KEY u_a (a), UNIQUE KEY u_bc (b, c)) ENGINE=MyISAM;
INSERT INTO t SELECT seq, IF(seq % 3 = 0, NULL, CONCAT('a', seq)), IF(seq % 5 = 0, NULL, CONCAT('b', seq % 4)), LPAD(seq, 3, '0') FROM seq_1_to_60;
