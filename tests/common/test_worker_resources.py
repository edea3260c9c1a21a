"""The per-worker resources (udfs/common/worker.py): made once per process however many threads ask,
a failed make tried again by the next caller, released with their close()."""
import threading
import time

import pytest

from udfs.common import worker


@pytest.fixture(autouse=True)
def fresh():
    worker.release()
    yield
    worker.release()


def test_threads_asking_at_once_get_one_thing_made_once():
    made = []

    def make():
        time.sleep(0.05)  # long enough for every thread to ask while it is being made
        made.append(object())
        return made[-1]

    got = []
    threads = [threading.Thread(target=lambda: got.append(worker.worker_resource("test.slow", "k", make)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and all(g is made[0] for g in got)
    assert worker.worker_resource("test.slow", "other key", object) is not made[0]


def test_a_failed_make_is_tried_again_by_the_next_caller():
    with pytest.raises(RuntimeError, match="model file missing"):
        worker.worker_resource("test.failing", "k", lambda: (_ for _ in ()).throw(RuntimeError("model file missing")))
    assert worker.worker_resource("test.failing", "k", lambda: "made") == "made"


def test_release_closes_what_it_held_and_the_next_caller_makes_it_again():
    class Client:
        closed = False

        def close(self):
            self.closed = True

    first = worker.worker_resource("test.client", "k", Client)
    assert worker.worker_resource("test.client", "k", Client) is first
    worker.release()
    assert first.closed
    second = worker.worker_resource("test.client", "k", Client)
    assert second is not first and not second.closed


def held_per_process(tmp_path):
    """What per-record code keeps per worker beside the models above: a walker, tables and word lists."""
    from udfs.extract import html, main_content, text, url_filter
    from udfs.filter import badwords, langid, quality

    words = tmp_path / "words.txt"
    words.write_text("badword\n", encoding="utf-8")
    return {
        "page walker": main_content.page_walker,
        "invisible characters table": text._dropped_table,
        "block model": html.block_model,
        "URL lists": lambda: url_filter._lists(((), (str(words),), (), ())),
        "bad words": lambda: badwords._compiled(str(words), "en"),
        "fastText line table": langid._fasttext_line,
        "quality signals": quality._compiled_signals,
    }


def test_release_makes_every_worker_table_and_list_again(tmp_path):
    for name, get in held_per_process(tmp_path).items():
        first = get()
        assert get() is first, name
        worker.release()
        again = get()
        assert again is not first, name
        assert type(again) is type(first), name
