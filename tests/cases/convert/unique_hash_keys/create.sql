CREATE TABLE t (id INT PRIMARY KEY, tx TEXT, bl BLOB, lv VARCHAR(1000) CHARACTER SET utf8mb4, UNIQUE KEY utx (tx), UNIQUE KEY ubl (bl), UNIQUE KEY ulv (lv)) ENGINE=MyISAM;
INSERT INTO t SELECT seq, IF(seq % 10, CONCAT('t', seq), NULL), IF(seq % 9, UNHEX(SHA1(seq)), NULL), IF(seq % 8, REPEAT(CONCAT('v', seq), 3), NULL) FROM seq_1_to_3000;
