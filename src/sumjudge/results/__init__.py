"""The results page: its pages and index (``page``), each page's banner (``banner``), what a table cannot show
(``notes``), the parse rates (``parse_rates``), the datasets' table (``dataset_tables``) and the model's files."""
