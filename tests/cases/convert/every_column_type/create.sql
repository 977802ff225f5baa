CREATE TABLE t (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED ZEROFILL, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, bo BOOLEAN,
  de DECIMAL(65,30), deu DECIMAL(10,2) UNSIGNED, fl FLOAT, flp FLOAT(7,3), db DOUBLE, dbp DOUBLE(20,10),
  b1 BIT(1), b64 BIT(64),
  da DATE, tm TIME, tm6 TIME(6), dt DATETIME, dt6 DATETIME(6), ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
  ch CHAR(10), chu CHAR(10) CHARACTER SET utf8mb4, vc VARCHAR(100), vcu VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  bn BINARY(8), vb VARBINARY(100),
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB, tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT CHARACTER SET utf8mb4,
  en ENUM('x', 'b', 'a'), st SET('p', 'q', 'r'), js JSON,
  g GEOMETRY, pt POINT, ls LINESTRING, pg POLYGON, mpt MULTIPOINT, mls MULTILINESTRING, mpg MULTIPOLYGON, gc GEOMETRYCOLLECTION,
  i6 INET6, i4 INET4, uu UUID,
  gs BIGINT AS (i * 2) STORED, gv VARCHAR(30) AS (CONCAT(vc, '!')) VIRTUAL,
  KEY (gv), UNIQUE KEY (tx), KEY (i, iu)
) ENGINE=MyISAM;
INSERT INTO t (id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, bo, de, deu, fl, flp, db, dbp, b1, b64, da, tm, tm6, dt, dt6, ts, ts6, yr,
  ch, chu, vc, vcu, bn, vb, tb, bl, mb, lb, tt, tx, mt, lt, en, st, js, g, pt, ls, pg, mpt, mls, mpg, gc, i6, i4, uu)
SELECT seq, -128 + seq % 256, seq % 256, -32768 + seq, seq % 65536, -8388608 + seq, seq * 5000, -2147483648 + seq, 4294967295 - seq,
  -9223372036854775808 + seq, 18446744073709551615 - seq, seq % 2,
  CONCAT(seq, '.', LPAD(seq, 30, '7')), seq / 100, seq / 7, seq / 3, 1 / seq, seq / 13, seq % 2, 18446744073709551615 - seq * 3,
  '2024-01-01' + INTERVAL seq DAY, SEC_TO_TIME(seq * 97 - 200000), SEC_TO_TIME(seq * 13) + INTERVAL seq MICROSECOND,
  '1970-01-01 00:00:00' + INTERVAL seq * 86399 SECOND, '2024-03-31 00:00:00' + INTERVAL seq * 1234567 MICROSECOND,
  FROM_UNIXTIME(1711846800 + seq * 7), FROM_UNIXTIME(1711846800 + seq * 7 + seq / 1000000), 1901 + seq % 255,
  CONCAT('c', seq), CONCAT('ü', seq, '😀'), CONCAT('v', seq, '   '), CONCAT('Ä', seq), UNHEX(HEX(seq)), UNHEX(SHA1(seq)),
  UNHEX(SHA1(seq)), REPEAT(UNHEX(SHA1(seq)), 10), REPEAT('m', seq), REPEAT('l', seq * 3), CONCAT('tt', seq), CONCAT('tx', seq), REPEAT('é', seq % 50), REPEAT('😀', seq % 20),
  1 + seq % 3, seq % 8, JSON_OBJECT('k', seq, 'a', JSON_ARRAY(seq, 'x')),
  POINT(seq, -seq), POINT(seq / 3, seq / 7), LINESTRING(POINT(0, 0), POINT(seq, seq)),
  POLYGON(LINESTRING(POINT(0, 0), POINT(seq, 0), POINT(seq, seq), POINT(0, 0))), MULTIPOINT(POINT(1, seq), POINT(2, seq)),
  MULTILINESTRING(LINESTRING(POINT(0, 0), POINT(1, seq))), MULTIPOLYGON(POLYGON(LINESTRING(POINT(0, 0), POINT(seq, 0), POINT(seq, seq), POINT(0, 0)))),
  GEOMETRYCOLLECTION(POINT(seq, 1), LINESTRING(POINT(0, 0), POINT(1, seq))),
  CONCAT('2001:db8::', HEX(seq)), CONCAT('10.', seq % 250, '.0.1'), CONCAT('00000000-0000-1000-8000-', LPAD(HEX(seq), 12, '0'))
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_1000) s;
INSERT INTO t (id) VALUES (0);
INSERT INTO t (id, de, fl, db, b64, da, dt, ts, ch, vc, vb, bl, tx, en, st) VALUES (-1, -0.000000000000000000000000000001, -0, -0, 0, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '', '', '', '', '', 'x', '');
