CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10), s INT AS (a * 2) STORED, sv VARCHAR(20) AS (CONCAT(b, '-', a)) STORED, KEY (a)) ENGINE=MyISAM;
INSERT INTO t (id, a, b) SELECT seq, IF(seq % 10, seq % 7, NULL), IF(seq % 3, CONCAT('b', seq), NULL) FROM seq_1_to_3000;
