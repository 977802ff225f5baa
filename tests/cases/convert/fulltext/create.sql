CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(100), body TEXT, FULLTEXT KEY ft_title (title), FULLTEXT KEY ft_both (title, body), KEY kt (title)) ENGINE=MyISAM;
INSERT INTO t (title, body) VALUES ('MySQL tutorial','DBMS stands for DataBase'),('How to use MySQL','After you went through a'),('Optimizing','In this tutorial we show');
