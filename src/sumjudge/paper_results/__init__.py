"""Numbers as printed in the papers (YAML), shown beside reproduced ones."""
