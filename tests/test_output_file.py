"""`--output FILE` of every command that has one: never over one of the command's inputs,
into a pipe or a device as into a pipe or device (never replacing it), through a symbolic link
to its target, keeping a file's mode and owner, and nothing written or left behind when the
report fails or Ctrl-C comes."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .conftest import AQE_INSPECT, SAMPLE_PLANS, as_a_foreground_job
from .hostile import run, sample

LOG = SAMPLE_PLANS / sample("skew_join")["path"]
# Every command with --output FILE, the arguments that run it on one input, its exit code.
COMMANDS = {
    "diff": (["diff", "{input}"], 0),
    "check": (["check", "{input}", "--expect", "coalesced"], 0),
    "snapshot": (["snapshot", "{input}"], 0),
    "why": (["why", "{input}"], 0),
    "advise": (["advise", "{input}"], 0),
    "compare": (["compare", "{input}", "{input}"], 0),
}
# `fleet --output` is the folder of its table, replaced whole by design (see its --help).
NOT_A_REPORT = {"fleet"}


def args(command: str, source, output=None) -> list:
    found = [part.format(input=source) for part in COMMANDS[command][0]]
    return found + (["--output", str(output)] if output is not None else [])


def one_error(err: str) -> str:
    assert err.startswith("aqe-inspect: error: ") and err.count("\n") == 1, err
    return err[len("aqe-inspect: error: "):].rstrip("\n")


@pytest.fixture
def log(tmp_path) -> Path:
    """A real sample event log, copied: the input the report must never replace."""
    path = tmp_path / "eventlog.json"
    path.write_bytes(LOG.read_bytes())
    return path


def report_of(command: str, source) -> str:
    """The report as standard output has it (with --output, the file holds just this)."""
    code, out, err = run(*args(command, source))
    assert (code, err) == (COMMANDS[command][1], "")
    return out


def test_every_command_with_output_is_tested():
    code, out, _ = run("--help")
    listed = re.findall(r"^\s{2}(\w+)\s", out[out.index("Commands"):], re.M)
    with_output = set()
    for command in listed:
        _, text, _ = run(command, "--help")
        if "--output" in text:
            with_output.add(command)
    assert with_output == set(COMMANDS) | NOT_A_REPORT


# ---- an input is never the output ----------------------------------------------------------

@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("how", ["same name", "output a link to it", "input a link to it",
                                 "hard link", "relative name"])
def test_the_output_is_never_the_input(tmp_path, log, command, how, monkeypatch):
    before = log.read_bytes()
    source, output = log, log
    if how == "output a link to it":
        output = tmp_path / "report.txt"
        output.symlink_to(log.name)
    elif how == "input a link to it":
        source = tmp_path / "linked.json"
        source.symlink_to(log)
    elif how == "hard link":
        output = tmp_path / "report.txt"
        os.link(log, output)
    elif how == "relative name":
        monkeypatch.chdir(tmp_path)
        source, output = "eventlog.json", "./sub/../eventlog.json"
        (tmp_path / "sub").mkdir()
    code, out, err = run(*args(command, source, output))
    assert (code, out) == (2, "")
    assert "--output is the input" in one_error(err)
    assert log.read_bytes() == before
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


@pytest.mark.parametrize("which", [0, 1])
def test_diffs_initial_and_final_plans_are_never_the_output(tmp_path, which):
    plans = []
    for name in ("formatted_before.txt", "formatted_after.txt"):
        plans.append(tmp_path / name)
        plans[-1].write_bytes((LOG.parent / name).read_bytes())
    before = plans[which].read_bytes()
    code, out, err = run("diff", str(plans[0]), str(plans[1]), "-o", str(plans[which]))
    assert (code, out) == (2, "")
    assert f"--output is the input {plans[which]}" in one_error(err)
    assert plans[which].read_bytes() == before


@pytest.mark.parametrize("command", ["diff", "check", "why"])
@pytest.mark.parametrize("where", ["an existing file", "a new file", "a new sub-folder",
                                   "through a link to the folder"])
def test_the_output_is_never_inside_an_input_folder(tmp_path, command, where):
    folder = tmp_path / "spark-events"
    folder.mkdir()
    (folder / "app-1").write_bytes(LOG.read_bytes())
    output = {"an existing file": folder / "app-1", "a new file": folder / "report.txt",
              "a new sub-folder": folder / "new" / "report.txt",
              "through a link to the folder": tmp_path / "link" / "report.txt"}[where]
    (tmp_path / "link").symlink_to(folder)
    if where == "a new sub-folder":
        output.parent.mkdir()
    code, out, err = run(*args(command, folder, output))
    assert (code, out) == (2, "")
    assert "--output is inside the input folder" in one_error(err)
    assert (folder / "app-1").read_bytes() == LOG.read_bytes()
    assert sorted(p.name for p in folder.rglob("*")) == sorted(
        ["app-1"] + (["new"] if where == "a new sub-folder" else []))


def test_a_report_beside_an_input_folder_is_fine(tmp_path):
    folder = tmp_path / "spark-events"
    folder.mkdir()
    (folder / "app-1").write_bytes(LOG.read_bytes())
    code, out, err = run(*args("diff", folder, tmp_path / "spark-events.txt"))
    assert (code, err) == (0, "")
    assert (tmp_path / "spark-events.txt").read_text("utf-8").startswith("Application")


@pytest.mark.parametrize("option", ["--config", "--snapshot", "--conf-file", "found config"])
def test_checks_other_inputs_are_never_the_output(tmp_path, log, option, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if option == "--snapshot":
        other = tmp_path / "plan.snap"
        assert run("snapshot", str(log), "-o", str(other))[0] == 0
        extra = ["--snapshot", str(other)]
    elif option == "--conf-file":
        other = tmp_path / "spark-defaults.conf"
        other.write_text("spark.sql.adaptive.enabled true\n", "utf-8")
        extra = ["--expect", "coalesced", "--conf-file", str(other)]
    else:
        other = tmp_path / "aqe-expect.toml"
        other.write_text('expect = ["coalesced"]\n', "utf-8")
        extra = ["--config", str(other)] if option == "--config" else []
    before = other.read_bytes()
    code, out, err = run("check", str(log), *extra, "--output", other.name)
    assert (code, out) == (2, "")
    assert "--output is the input" in one_error(err)
    assert other.read_bytes() == before


def test_whys_settings_file_is_never_the_output(tmp_path, log):
    conf = tmp_path / "spark-defaults.conf"
    conf.write_text("spark.sql.adaptive.enabled true\n", "utf-8")
    code, _, err = run("why", str(log), "--conf-file", str(conf), "-o", str(conf))
    assert code == 2 and "--output is the input" in one_error(err)
    assert conf.read_text("utf-8") == "spark.sql.adaptive.enabled true\n"


# The system's /dev/stdin and /dev/stdout are links into /proc/self/fd. The tests make links of
# their own like them: a regression run as root must not replace the system's. The system's
# own are tried only when not root (a plain user cannot replace anything in /dev).
AS_ROOT = not hasattr(os, "geteuid") or os.geteuid() == 0
SYSTEM_LINK = pytest.param("/dev", marks=pytest.mark.skipif(
    AS_ROOT, reason="as root, a wrong --output could replace the system's /dev entries"))


def fd_link(folder, name: str, number: int) -> str:
    """`folder`/`name`, a link to /proc/self/fd/`number` as /dev/stdout is; or /dev's own."""
    if str(folder) == "/dev":
        return f"/dev/{name}"
    Path(folder).mkdir(exist_ok=True)
    link = Path(folder) / name
    link.symlink_to(f"/proc/self/fd/{number}")
    return str(link)


@pytest.mark.parametrize("output", ["eventlog.json", "own", SYSTEM_LINK])
def test_standard_input_from_the_file_is_never_the_output(tmp_path, log, output):
    """`aqe-inspect diff - -o in.json < in.json` (the shell opens the file; we see fd 0),
    or `-o /dev/stdin` then."""
    if output != "eventlog.json":
        output = fd_link(tmp_path / "links" if output == "own" else output, "stdin", 0)
    before = log.read_bytes()
    with open(log, "rb") as stdin:
        done = subprocess.run([*AQE_INSPECT, "diff", "-", "-o", output], stdin=stdin,
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert "--output is the input standard input" in one_error(done.stderr)
    assert log.read_bytes() == before


# ---- pipes, devices, standard output ---------------------------------------------------------

def read_in_background(path: Path) -> dict:
    """A reader of the named pipe `path`, as `cat path` would be."""
    got = {}

    def read():
        with open(path, "rb") as pipe:
            got["data"] = pipe.read()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    got["thread"] = thread
    return got


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_named_pipe_is_written_into_not_replaced(tmp_path, log, command):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = read_in_background(fifo)
    code, out, err = run(*args(command, log, fifo))
    reader["thread"].join(30)
    assert (code, err) == (COMMANDS[command][1], "")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert reader["data"].decode("utf-8") == report_of(command, log)
    assert sorted(os.listdir(tmp_path)) == ["eventlog.json", "report.fifo"]


def test_a_named_pipe_gets_nothing_when_the_report_fails(tmp_path):
    """The pipe is opened only once the report is whole: a failed one writes nothing."""
    broken = tmp_path / "broken.json"
    broken.write_bytes(b"\x00\x01binary junk\xff" * 100)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = read_in_background(fifo)
    code, _, err = run("check", str(broken), "--expect", "coalesced", "--format", "junit",
                       "-o", str(fifo))
    assert code == 2 and one_error(err)
    os.close(os.open(fifo, os.O_WRONLY))  # let the reader go: it has had nothing
    reader["thread"].join(30)
    assert reader["data"] == b""
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def own_device(folder: Path, name: str, minor: int) -> Path:
    """A memory device of our own in `folder` (1,3 /dev/null; 1,7 /dev/full) where one may be
    made; else, when not root, the system's, whose folder a plain user could never replace it
    in anyway. Never the system's as root: were the code wrong, the test would replace it."""
    node = folder / name
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        return node
    except (OSError, AttributeError):
        if not hasattr(os, "geteuid") or os.geteuid() == 0:
            pytest.skip("root, yet no device node can be made here")
        if not Path("/dev", name).exists():
            pytest.skip(f"no /dev/{name} here")
        return Path("/dev", name)


@pytest.fixture
def device(tmp_path) -> Path:
    return own_device(tmp_path, "null", 3)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_device_is_written_into_not_replaced(device, log, command):
    before = os.stat(device)
    code, out, err = run(*args(command, log, device))
    assert (code, err) == (COMMANDS[command][1], "")
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert (after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_ino,
                                                          stat.S_IMODE(before.st_mode))
    assert not [p for p in device.parent.iterdir() if p.name.startswith(".null.")]


@pytest.mark.parametrize("links", ["own", SYSTEM_LINK])
@pytest.mark.parametrize("redirect", ["w", "a"])
def test_dev_stdout_writes_where_standard_output_goes(tmp_path, log, redirect, links):
    """`check -o /dev/stdout > file`: the report, then the summary, in the shell's file (and
    after what it held, for `>>`), never a file replaced behind the shell's back."""
    stdout_link = fd_link(tmp_path / "links" if links == "own" else links, "stdout", 1)
    target = tmp_path / "out.txt"
    target.write_text("earlier\n", "utf-8")
    with open(target, redirect) as stdout:
        done = subprocess.run([*AQE_INSPECT, *args("check", log, stdout_link), "--format",
                               "junit"], stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    code, report, _ = run(*args("check", log), "--format", "junit")
    summary = "aqe-inspect check: all 1 expectation(s) met\n"
    held = "earlier\n" if redirect == "a" else ""
    assert target.read_text("utf-8") == held + report + summary
    assert Path(stdout_link).is_symlink()


@pytest.mark.parametrize("links", ["own", SYSTEM_LINK])
def test_dev_stdout_into_a_reader_that_leaves_is_no_error(tmp_path, log, links):
    stdout_link = fd_link(tmp_path / "links" if links == "own" else links, "stdout", 1)
    done = subprocess.run(f"{' '.join(AQE_INSPECT)} diff {log} --format junit -o "
                          f"{stdout_link} | head -n 1", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.startswith("<?xml") and done.stderr == ""
    assert Path(stdout_link).is_symlink()


# ---- regular files: mode, owner, links ---------------------------------------------------------

@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_an_existing_files_mode_is_kept(tmp_path, log, command, mode):
    target = tmp_path / "report.txt"
    target.write_text("old report\n", "utf-8")
    target.chmod(mode)
    code, _, err = run(*args(command, log, target))
    assert (code, err) == (COMMANDS[command][1], "")
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
    assert target.read_text("utf-8") == report_of(command, log)


def test_a_new_file_gets_the_umasks_mode(tmp_path, log):
    mask = os.umask(0o027)
    try:
        code, _, err = run(*args("diff", log, tmp_path / "new.txt"))
    finally:
        os.umask(mask)
    assert (code, err) == (0, "")
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o640


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root may give a file to another user")
def test_an_existing_files_owner_is_kept(tmp_path, log):
    target = tmp_path / "report.txt"
    target.write_text("old report\n", "utf-8")
    os.chown(target, 4321, 8765)
    code, _, err = run(*args("diff", log, target))
    assert (code, err) == (0, "")
    found = os.stat(target)
    assert (found.st_uid, found.st_gid) == (4321, 8765)
    assert target.read_text("utf-8") == report_of("diff", log)


def test_a_file_the_user_may_not_write_is_not_replaced(tmp_path, log, monkeypatch):
    """As the shell's `>` would fail on it (root may write anything: the check is faked)."""
    target = tmp_path / "report.txt"
    target.write_text("read only\n", "utf-8")
    target.chmod(0o444)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False
                        if Path(path) == target and mode == os.W_OK else real_access(path, mode))
    code, _, err = run(*args("diff", log, target))
    assert code == 2 and "cannot write the report: Permission denied" in one_error(err)
    assert target.read_text("utf-8") == "read only\n"
    assert sorted(os.listdir(tmp_path)) == ["eventlog.json", "report.txt"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_symbolic_link_is_followed_and_kept(tmp_path, log, command):
    """The link in one folder, its target in another: the target is replaced (atomically,
    in its own folder), the link still points at it, nothing left in either folder."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    target = there / "report.txt"
    target.write_text("old report\n", "utf-8")
    target.chmod(0o600)
    link = here / "report.txt"
    link.symlink_to(Path("..", "there", "report.txt"))
    code, _, err = run(*args(command, log, link))
    assert (code, err) == (COMMANDS[command][1], "")
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "there", "report.txt")
    assert target.read_text("utf-8") == report_of(command, log)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert os.listdir(here) == ["report.txt"] and os.listdir(there) == ["report.txt"]


def test_a_dangling_link_gets_its_target_made(tmp_path, log):
    link = tmp_path / "report.txt"
    link.symlink_to("made.txt")
    code, _, err = run(*args("diff", log, link))
    assert (code, err) == (0, "")
    assert link.is_symlink()
    assert (tmp_path / "made.txt").read_text("utf-8") == report_of("diff", log)


@pytest.mark.parametrize("make, message", [
    (lambda p: (p / "a").symlink_to("b") or (p / "b").symlink_to("a"),
     "Too many levels of symbolic links"),
    (lambda p: (p / "a").mkdir(), "is a directory"),
    (lambda p: (p / "file").write_text("x") or None, "Not a directory"),
])
def test_an_output_that_cannot_be_written_is_one_line(tmp_path, log, make, message):
    make(tmp_path)
    target = tmp_path / ("file/report.txt" if message == "Not a directory" else "a")
    code, out, err = run(*args("diff", log, target))
    assert (code, out) == (2, "")
    assert message in one_error(err)


# ---- failures and Ctrl-C leave nothing ---------------------------------------------------------

def _interrupt(*_args, **_kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("when", ["while writing", "while renaming", "while setting the mode"])
def test_ctrl_c_leaves_the_old_file_and_no_temporary(tmp_path, log, monkeypatch, when):
    target = tmp_path / "report.txt"
    target.write_text("old report\n", "utf-8")
    if when == "while writing":
        from aqe_inspect.formats.text import TextFormat

        monkeypatch.setattr(TextFormat, "write_report", _interrupt)
    elif when == "while renaming":
        monkeypatch.setattr(os, "replace", _interrupt)
    else:
        monkeypatch.setattr(os, "chmod", _interrupt)
    code, out, err = run(*args("diff", log, target))
    monkeypatch.undo()
    assert (code, out, err) == (130, "", "aqe-inspect: interrupted\n")
    assert target.read_text("utf-8") == "old report\n"
    assert sorted(os.listdir(tmp_path)) == ["eventlog.json", "report.txt"]


def test_ctrl_c_before_a_pipe_is_written_leaves_it_unopened(tmp_path, log, monkeypatch):
    from aqe_inspect.formats.text import TextFormat

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = read_in_background(fifo)
    monkeypatch.setattr(TextFormat, "write_report", _interrupt)
    code, _, err = run(*args("diff", log, fifo))
    assert (code, err) == (130, "aqe-inspect: interrupted\n")
    os.close(os.open(fifo, os.O_WRONLY))
    reader["thread"].join(30)
    assert reader["data"] == b""


def test_a_full_disk_on_a_device_is_one_line(tmp_path, log):
    """A /dev/full: every write fails with ENOSPC; it stays the device it was."""
    full = own_device(tmp_path, "full", 7)
    code, out, err = run(*args("diff", log, full))
    assert (code, out) == (2, "")
    assert "cannot write the report: No space left on device" in one_error(err)
    assert stat.S_ISCHR(os.lstat(full).st_mode)


# The command, its text report held up half written until a signal comes.
_HELD_UP = """
import sys, time
from aqe_inspect.formats.text import TextFormat

def held_up(self, report, stream):
    stream.write("half a report")
    sys.stderr.write("writing\\n")
    sys.stderr.flush()
    time.sleep(120)

TextFormat.write_report = held_up
from aqe_inspect.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("output", ["report.txt", "report.fifo"])
def test_a_real_ctrl_c_while_writing_leaves_nothing(tmp_path, log, output):
    """SIGINT to the real process in the middle of its report (half of it written): exit 130,
    the old file whole and no temporary beside it; a pipe never opened."""
    import signal

    target = tmp_path / output
    if output.endswith(".fifo"):
        os.mkfifo(target)
        reader = read_in_background(target)
    else:
        target.write_text("old report\n", "utf-8")
    process = subprocess.Popen([sys.executable, "-I", "-c", _HELD_UP, "diff", str(log), "-o",
                                str(target)], stderr=subprocess.PIPE, cwd=tmp_path,
                               preexec_fn=as_a_foreground_job)
    try:
        assert process.stderr.readline() == b"writing\n"
        assert any(p.endswith(".tmp") for p in os.listdir(tmp_path)) != output.endswith(".fifo")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert (process.returncode, err) == (130, b"aqe-inspect: interrupted\n")
    assert sorted(os.listdir(tmp_path)) == ["eventlog.json", output]
    if output.endswith(".fifo"):
        os.close(os.open(target, os.O_WRONLY))
        reader["thread"].join(30)
        assert reader["data"] == b""
    else:
        assert target.read_text("utf-8") == "old report\n"
