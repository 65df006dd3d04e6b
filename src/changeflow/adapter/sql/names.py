"""The patterns of SQL names statements are recognised by: a name, quoted or not, and one
qualified by up to two others (``db.schema.name``)."""

NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
QNAME = rf"{NAME}(?:\s*\.\s*{NAME}){{0,2}}"
