CREATE TABLE t (e ENUM('zz','mm','aa') NOT NULL, f FLOAT NOT NULL, s VARCHAR(10) COLLATE latin1_general_ci NOT NULL, b BIT(3) NOT NULL, n INT NOT NULL, PRIMARY KEY (e, f, s, b, n)) ENGINE=MyISAM;
INSERT INTO t SELECT 1 + seq % 3, (seq % 50) / 10, ELT(1 + seq % 4, 'x', 'X ', 'y', 'Y'), seq % 8, seq FROM seq_1_to_3000;
