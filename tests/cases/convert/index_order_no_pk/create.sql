CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT, KEY kc (c), UNIQUE KEY ub (b), UNIQUE KEY ua (a), KEY ka (a, c)) ENGINE=MyISAM;
INSERT INTO t SELECT seq, 100000 - seq, seq % 10 FROM seq_1_to_2000;
