CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, note TEXT CHARACTER SET utf8mb4, KEY kn (name)) ENGINE=MyISAM DEFAULT CHARSET=utf8mb4 COMMENT='people, ünïcödé';
INSERT INTO t VALUES (1, 'Zoë', '🐬 dolphins'), (2, '李小龍', NULL), (3, 'Ærøskøbing', 'ok');
