-- `--verify hash`: the row hash for a table CHECKSUM TABLE would read alike on both engines.
CREATE TABLE t (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, c CHAR(20), KEY k (k)) ENGINE=MyISAM;
INSERT INTO t SELECT seq, seq % 13, CONCAT('c', seq) FROM seq_1_to_3000;
