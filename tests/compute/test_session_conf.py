"""Session settings made for a block of plans come back as they were, whichever thread leaves
last: threads share the Spark session."""

from __future__ import annotations

import threading

import pytest

from changeflow.spark import session_conf

pytestmark = pytest.mark.spark

KEY = "spark.sql.shuffle.partitions"


def test_overlapping_blocks_in_two_threads_restore_the_setting(spark) -> None:
    before = spark.conf.get(KEY)
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()

    def a() -> None:
        with session_conf(spark, {KEY: "3"}):
            a_inside.set()
            b_inside.wait(60)
        a_left.set()

    def b() -> None:
        a_inside.wait(60)
        with session_conf(spark, {KEY: "3"}):  # enters while a holds the setting
            b_inside.set()
            a_left.wait(60)
            assert spark.conf.get(KEY) == "3"  # a's leaving does not undo b's block

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert spark.conf.get(KEY) == before


def test_a_nested_block_restores_on_the_way_out(spark) -> None:
    before = spark.conf.get(KEY)
    with session_conf(spark, {KEY: "5"}):
        with session_conf(spark, {KEY: "7"}):
            assert spark.conf.get(KEY) == "7"
        assert spark.conf.get(KEY) == "5"
    assert spark.conf.get(KEY) == before
