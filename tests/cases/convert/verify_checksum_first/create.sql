-- `--verify checksum` on a table CHECKSUM TABLE reads differently on MyISAM and InnoDB (BIT, a UNIQUE hash key,
-- a STORED generated column): the checksums differ, the row hash of both tables decides, and the copy converts.
CREATE TABLE t (
  id INT NOT NULL PRIMARY KEY,
  flags BIT(5),
  body TEXT,
  twice BIGINT AS (id * 2) STORED,
  UNIQUE KEY body_u (body)
) ENGINE=MyISAM;
INSERT INTO t (id, flags, body) SELECT seq, seq % 32, CONCAT('body-', seq) FROM seq_1_to_2000;
INSERT INTO t (id) VALUES (0);
