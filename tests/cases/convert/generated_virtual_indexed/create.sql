CREATE TABLE t (id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL, w INT AS (a + 1) VIRTUAL, KEY kv (v), KEY kav (a, v)) ENGINE=MyISAM;
INSERT INTO t (id, a) SELECT seq, IF(seq % 10, seq % 7, NULL) FROM seq_1_to_3000;
