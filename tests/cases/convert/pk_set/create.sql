CREATE TABLE t (s SET('z','y','x','w','v','u','t','s','r','q','p','o') NOT NULL PRIMARY KEY, v INT) ENGINE=MyISAM;
INSERT INTO t SELECT seq, seq FROM seq_1_to_4095;
