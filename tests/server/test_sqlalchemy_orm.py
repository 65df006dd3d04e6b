"""SQLAlchemy's ORM unit of work against ``changeflow serve``, as against PostgreSQL 15: one
session adds, flushes, queries what it flushed, changes and deletes inside one transaction
(psycopg's default, not autocommit), rolls back and commits; the same calls give the same
rows on both."""

from __future__ import annotations

import pytest

sa = pytest.importorskip("sqlalchemy")
orm = pytest.importorskip("sqlalchemy.orm")


def _unit_of_work(url: str, prefix: str) -> list:
    class Base(orm.DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = f"{prefix}author"
        id = sa.Column(sa.Integer, primary_key=True)
        name = sa.Column(sa.String(40), nullable=False, unique=True)
        books = orm.relationship(
            "Book", back_populates="author", cascade="all, delete-orphan", order_by="Book.title"
        )

    class Book(Base):
        __tablename__ = f"{prefix}book"
        id = sa.Column(sa.Integer, primary_key=True)
        title = sa.Column(sa.Text, nullable=False)
        pages = sa.Column(sa.Integer)
        author_id = sa.Column(sa.ForeignKey(f"{prefix}author.id"), nullable=False)
        author = orm.relationship(Author, back_populates="books")

    engine = sa.create_engine(url)
    seen: list = []
    try:
        Base.metadata.create_all(engine)
        with orm.Session(engine) as session:
            ann = Author(name="ann", books=[Book(title="a", pages=10), Book(title="b", pages=5)])
            session.add(ann)
            session.flush()  # INSERTs, then the queries below see them before COMMIT
            found = session.scalars(sa.select(Author).where(Author.name == "ann")).one()
            seen.append([(b.title, b.pages) for b in found.books])
            seen.append(session.scalar(sa.select(sa.func.sum(Book.pages))))
            found.books[0].pages = 11
            session.add(Author(name="bob"))
            session.flush()
            seen.append(
                session.execute(
                    sa.select(Author.name, sa.func.count(Book.id))
                    .outerjoin(Book)
                    .group_by(Author.name)
                    .order_by(Author.name)
                ).all()
            )
            session.commit()
        with orm.Session(engine) as session:
            bob = session.scalars(sa.select(Author).where(Author.name == "bob")).one()
            session.delete(bob)
            session.add(Book(title="c", pages=1, author_id=bob.id))
            with pytest.raises(sa.exc.IntegrityError):
                session.flush()
            session.rollback()
            ann = session.scalars(sa.select(Author).where(Author.name == "ann")).one()
            ann.books.pop()
            session.commit()
        with orm.Session(engine) as session:
            seen.append(
                session.execute(
                    sa.select(Author.name, Book.title, Book.pages)
                    .join(Book, isouter=True)
                    .order_by(Author.name, Book.title)
                ).all()
            )
        return [
            [tuple(r) if isinstance(r, sa.Row) else r for r in s] if isinstance(s, list) else s
            for s in seen
        ]
    finally:
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.mark.postgres
def test_orm_unit_of_work_as_on_postgres(server, postgres_url: str, table_name: str) -> None:
    ours = _unit_of_work(
        f"postgresql+psycopg://tester@{server.host}:{server.port}/materialize", table_name
    )
    theirs = _unit_of_work(
        postgres_url.replace("postgresql://", "postgresql+psycopg://"), table_name
    )
    assert ours == theirs
    assert ours[-1] == [("ann", "a", 11), ("bob", None, None)]
