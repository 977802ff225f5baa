CREATE TABLE t (u UUID NOT NULL, i INET6 NOT NULL, v INT, PRIMARY KEY (u, i)) ENGINE=MyISAM;
INSERT INTO t SELECT CONCAT(LPAD(HEX(seq % 700), 8, '0'), '-0000-1000-8000-', LPAD(HEX(seq), 12, '0')), IF(seq % 2, CONCAT('::ffff:10.0.', seq % 5, '.', seq % 250), CONCAT('2001:db8::', HEX(seq))), seq FROM seq_1_to_3000;
