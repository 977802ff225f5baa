-- The rows are written under utf8mb4_bin, where 'A' and 'a' differ; the harness (relabel= in expect) then gives t
-- the definition of t_ci, the same table under utf8mb4_general_ci, as a collation changed under MyISAM's data
-- does. The values sort in the same order under both collations ('A' < 'a' < 'k0…' < 'kO' < 'ko' < 'zED' …), so
-- the index stays in order and only the duplicates are wrong: 'A'/'a', 'kO'/'ko' and 'zED'/'zeD'/'zed'.
CREATE TABLE t (id INT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_bin NOT NULL, n INT, UNIQUE KEY uk_code (code)) ENGINE=MyISAM;
CREATE TABLE t_ci (id INT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL, n INT, UNIQUE KEY uk_code (code)) ENGINE=MyISAM;
INSERT INTO t SELECT seq, CONCAT('k', LPAD(seq, 6, '0')), seq FROM seq_1_to_3000;
INSERT INTO t VALUES (3001, 'A', 1), (3002, 'a', 2), (3003, 'kO', 3), (3004, 'ko', 4), (3005, 'zED', 5), (3006, 'zeD', 6), (3007, 'zed', 7);
