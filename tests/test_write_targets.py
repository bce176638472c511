"""``ex.save(path)`` and ``ex.report(path)`` write a file whole through a temporary file renamed over the
target: through a symbolic link to the file it leads to (the link stays a link, its target is updated),
and never over anything that is not a regular file -- a FIFO, a character device (as root, ``ex.save(
"/dev/full")`` used to turn the device into a regular file), a folder -- which is refused in words naming
the path and what it is. A report's write that fails says so in words naming the user's path, never the
hidden temporary file beside it, and leaves nothing behind.

The character device is a copy of /dev/null's node made with ``os.mknod`` in the test's own folder (root
only); the real /dev is never touched."""
import os
import stat
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

import workbench as wb
from workbench.errors import ReportFileError, SavedFileError


@pytest.fixture(scope="module")
def ex():
    return wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(3), pipeline="canonicalize")


def _chardev(folder):
    """A character device node with /dev/null's numbers in ``folder``, or a skip saying why there is none."""
    if os.geteuid() != 0:
        pytest.skip("making a character device (os.mknod) needs root; this test runs as an ordinary user")
    rdev = os.stat("/dev/null").st_rdev  # its numbers only: /dev/null itself is never opened or written
    path = folder / "device"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(os.major(rdev), os.minor(rdev)))
    except PermissionError as e:
        pytest.skip(f"this root cannot make device nodes here (os.mknod: {e.strerror}; a container without "
                    "CAP_MKNOD)")
    return path


def _write(ex, how: str, path):
    return ex.save(path) if how == "save" else ex.report(path)


ERRORS = {"save": SavedFileError, "report": ReportFileError}


@pytest.mark.parametrize("how", ["save", "report"])
def test_a_symbolic_link_is_written_through_to_its_target(ex, tmp_path, how):
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "out.file"
    target.write_text("an older file")
    os.chmod(target, 0o640)
    link = tmp_path / "links" / "out.link"
    link.symlink_to(target)
    assert _write(ex, how, link) == link
    assert link.is_symlink() and os.readlink(link) == str(target)  # still a link, to the same file
    assert target.read_bytes() != b"an older file" and target.stat().st_size > 1000
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the target's own permissions kept
    if how == "save":
        assert wb.load(link).names == ex.names
    else:
        assert target.read_text().startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(tmp_path / "real")) == ["out.file"]  # no temporary file left anywhere
    assert sorted(os.listdir(tmp_path / "links")) == ["out.link"]


@pytest.mark.parametrize("how", ["save", "report"])
def test_a_dangling_symbolic_link_makes_the_file_it_names(ex, tmp_path, how):
    link = tmp_path / "out.link"
    link.symlink_to(tmp_path / "made.file")
    _write(ex, how, link)
    assert link.is_symlink() and (tmp_path / "made.file").is_file()


@pytest.mark.parametrize("how", ["save", "report"])
def test_a_fifo_is_refused_in_words_and_stays_a_fifo(ex, tmp_path, how):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ERRORS[how]) as caught:
        _write(ex, how, fifo)
    message = str(caught.value)
    assert str(fifo) in message and "a FIFO (named pipe), not a regular file" in message, message
    assert ".tmp" not in message
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


@pytest.mark.parametrize("how", ["save", "report"])
def test_a_symbolic_link_to_a_fifo_is_refused_naming_both(ex, tmp_path, how):
    fifo, link = tmp_path / "pipe", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    with pytest.raises(ERRORS[how], match="is a symbolic link to .*pipe'?, which is a FIFO"):
        _write(ex, how, link)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()


@pytest.mark.parametrize("how", ["save", "report"])
def test_a_character_device_is_refused_in_words_and_stays_a_device(ex, tmp_path, how):
    device = _chardev(tmp_path)
    before = os.lstat(device)
    with pytest.raises(ERRORS[how]) as caught:
        _write(ex, how, device)
    assert str(device) in str(caught.value) and "a character device, not a regular file" in str(caught.value)
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert os.listdir(tmp_path) == ["device"]


def test_a_report_into_a_missing_folder_says_so_naming_the_users_path(ex, tmp_path):
    path = tmp_path / "no" / "such" / "r.html"
    with pytest.raises(ReportFileError) as caught:
        ex.report(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot write the report: the folder ") and "does not exist" in message
    assert ".tmp" not in message and ".r.html." not in message  # not the hidden temporary file's name
    assert isinstance(caught.value, OSError)  # code that caught report's OSError still does


def test_a_report_whose_write_fails_midway_says_so_and_leaves_the_old_one(tmp_path):
    """A real write error (the file size limit, RLIMIT_FSIZE: EFBIG at the first byte past it) in a fresh
    process: the error names the report's path and the cause, the older report is whole, no temporary
    file stays."""
    path = tmp_path / "r.html"
    path.write_text("an older report")
    script = textwrap.dedent(f"""
        import resource, signal
        import jax.numpy as jnp
        import workbench as wb
        from workbench.errors import ReportFileError
        ex = wb.explore(lambda x: jnp.sin(x) * 2, jnp.ones(3), pipeline="canonicalize")
        ex.stages
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            ex.report({str(path)!r})
        except ReportFileError as e:
            print("REFUSED", e)
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("REFUSED"))
    assert line == (f"REFUSED {path}: cannot write the report: writing it failed (File too large); what was at "
                    "the path, if anything, is as it was"), line
    assert path.read_text() == "an older report" and os.listdir(tmp_path) == ["r.html"]


def test_a_folder_is_refused_as_a_report(ex, tmp_path):
    with pytest.raises(ReportFileError, match="it is a folder, not a regular file"):
        ex.report(tmp_path)
    assert os.listdir(tmp_path) == []
