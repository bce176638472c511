"""XLA's per-pass dumps read while XLA writes them (``pipeline.xla.DumpWatch``, issue 46): the stages read
from what the watch read during a real compile, plus what came after it, are those the folder gives once
the compile is over, and each text the watch read is the whole file."""
from __future__ import annotations

import os

import jax

from workbench import examples
from workbench.backends import backend_for
from workbench.pipeline.xla import DumpWatch, dump_options, platform_of_lowered, read_dumps


def test_dumps_read_during_the_compile_are_the_whole_files_and_give_the_same_stages(tmp_path):
    fn, args = examples.load("attention")  # hundreds of ms of compile: the watch looks many times
    lowered = jax.jit(fn).lower(*args)
    watch = DumpWatch(str(tmp_path))
    try:
        lowered.compile(compiler_options=dump_options(str(tmp_path)))
    finally:
        texts = watch.stop()
    files = sorted(os.listdir(tmp_path))
    assert watch.looks > 0 and texts, "nothing was read while XLA compiled"
    assert len(texts) < len(files)  # the last dumps (the optimized module, the backend's) are read after
    for name, text in texts.items():
        assert text == (tmp_path / name).read_text(errors="replace"), name
    names = backend_for(platform_of_lowered(lowered)).dumps
    after, during = read_dumps(str(tmp_path), names), read_dumps(str(tmp_path), names, texts)
    assert during == after
    assert [s.name for s in during.stages][:1] == ["xla:before_optimizations"] and len(during.stages) > 3
    looks = watch.looks
    watch.read_written()  # stopped: reads nothing more
    assert watch.looks == looks
    # each file name examined once however many looks the compile took (the work is the folder's size)
    assert watch.examined <= len(files) and watch.looks > 1
    # a dump the same as the one before it is held as that one's text object: one object per run of equal dumps
    in_order = sorted(texts, key=lambda f: (not f.endswith(".before_optimizations.txt"), f))
    runs = sum(1 for i, f in enumerate(in_order) if i == 0 or texts[f] != texts[in_order[i - 1]])
    assert len({id(texts[f]) for f in in_order}) == runs < len(texts)
