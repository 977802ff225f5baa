CREATE TABLE `we``ird 'name"` (`id` INT PRIMARY KEY, `col``umn` VARCHAR(10), KEY `k``ey` (`col``umn`)) ENGINE=MyISAM;
INSERT INTO `we``ird 'name"` VALUES (1, 'a'), (2, 'b');
