-- A table from before MySQL 5.6, upgraded in place: DATETIME, TIME and TIMESTAMP in the old format (SHOW CREATE
-- TABLE prints `/* mariadb-5.3 */`). Any copy writes the current format; the values must stay, and the
-- definition check must not fail on the marker (it did, with exit 3 after the copy, and --restart again).
SET GLOBAL mysql56_temporal_format = OFF;
CREATE TABLE t (
  id INT NOT NULL PRIMARY KEY,
  d DATETIME, d6 DATETIME(6), tm TIME, tm3 TIME(3), ts TIMESTAMP NULL,
  k INT, KEY k (k), KEY d (d)
) ENGINE=MyISAM;
SET GLOBAL mysql56_temporal_format = ON;
INSERT INTO t SELECT seq, '2001-01-01' + INTERVAL seq HOUR, '1999-12-31 23:59:59.123456' + INTERVAL seq SECOND,
  SEC_TO_TIME(seq * 37 - 50000), SEC_TO_TIME(seq) + INTERVAL seq * 1000 MICROSECOND, FROM_UNIXTIME(1000000000 + seq * 101), seq % 7
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_3000) s;
INSERT INTO t (id) VALUES (0);
