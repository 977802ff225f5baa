CREATE TABLE t (g INT NOT NULL, id INT NOT NULL AUTO_INCREMENT, v VARCHAR(10), k INT, KEY kk (k), KEY id (id), PRIMARY KEY (g, id)) ENGINE=MyISAM;
INSERT INTO t (g, v, k) SELECT seq % 5, CONCAT('v', seq), seq % 3 FROM seq_1_to_2000;
