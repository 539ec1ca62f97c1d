"""Which paths a body may touch on the event loop: mount types, symlinks, and the move to a worker thread."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nexus_core.fs.nonblocking import (
    MOUNTS,
    Blocking,
    MountTable,
    parse_mountinfo,
    plain_local,
    remote_points,
    run_nonblocking,
)

# Lines as Linux writes them (long option lists shortened) on machines with these mounts: a desktop with
# NFS, SMB, gvfs, an automounter and an NTFS stick; a WSL drive; a container's overlay.
MOUNTINFO = r"""29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
25 29 0:23 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=3256288k,mode=755,inode64
112 29 0:49 / /home/alice/nfs rw,relatime shared:60 - nfs4 fileserver:/export/home rw,vers=4.2,hard,addr=10.0.0.2
113 112 8:2 / /home/alice/nfs/scratch rw,relatime shared:61 - ext4 /dev/sda2 rw
130 29 0:55 / /mnt/share rw,relatime shared:70 - cifs //nas/share rw,vers=3.1.1,soft,actimeo=1
140 25 0:60 / /run/user/1000/gvfs rw,nosuid,nodev,relatime shared:80 - fuse.gvfsd-fuse gvfsd-fuse rw,user_id=1000
47 29 0:41 / /net rw,relatime shared:30 - autofs /etc/auto.net rw,fd=13,pgrp=1203,indirect
150 29 0:70 / /media/My\040Disk rw,nosuid,nodev,relatime shared:90 - fuseblk /dev/sdb1 rw,user_id=0,blksize=4096
90 29 0:45 / /mnt/c rw,noatime - 9p drvfs rw,aname=drvfs;path=C:\,trans=virtio
600 29 0:80 / /srv/app rw,relatime master:1 - overlay overlay rw,lowerdir=/l/ABC,upperdir=/u,workdir=/w
"""


@pytest.fixture
def table(tmp_path: Path) -> MountTable:
    (tmp_path / "mountinfo").write_text(MOUNTINFO)
    return MountTable(str(tmp_path / "mountinfo"))


def test_mount_types_are_read_from_real_mountinfo_lines():
    mounts = parse_mountinfo(MOUNTINFO)
    assert mounts is not None and ("/media/My Disk", "fuseblk") in mounts  # \040 is a space
    assert remote_points(mounts) == (
        "/home/alice/nfs", "/media/My Disk", "/mnt/c", "/mnt/share", "/net", "/run/user/1000/gvfs",
    )  # fmt: skip
    assert parse_mountinfo("29 1 8:1 / / rw,relatime shared:1 ext4 /dev/sda1 rw") is None  # no "-" separator


def test_a_path_is_local_only_when_every_mount_on_its_way_is(table: MountTable):
    assert table.local("/home/alice/project/a.py")
    assert table.local("/srv/app/main.py") and table.local("/run/x")  # overlay and tmpfs
    assert table.types("/srv/app/main.py") == ["ext4", "overlay"]
    for remote in ("/home/alice/nfs", "/home/alice/nfs/a.py", "/mnt/share/x", "/run/user/1000/gvfs/smb/x",
                   "/net/host/export", "/media/My Disk/a", "/mnt/c/Users"):  # fmt: skip
        assert not table.local(remote), remote
    # A local disk mounted below the NFS mount is reached through it: not local either.
    assert not table.local("/home/alice/nfs/scratch/x")
    assert table.local("/home/alice/nfsother/x")  # a longer name is not below the mount point


def test_an_unreadable_or_odd_table_makes_nothing_local(tmp_path: Path):
    assert not MountTable(str(tmp_path / "missing")).local("/tmp")
    (tmp_path / "odd").write_text("not a mountinfo line\n")
    assert not MountTable(str(tmp_path / "odd")).local("/tmp")


def test_plain_local_walks_the_path_and_refuses_symlinks_missing_parts_and_remote_mounts(tmp_path: Path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("a\n")
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    (tmp_path / "dir" / "alias.txt").symlink_to(tmp_path / "dir" / "a.txt")
    assert plain_local(str(tmp_path / "dir" / "a.txt"))
    assert not plain_local(str(tmp_path / "link" / "a.txt"))  # a folder on the way is a symlink
    assert not plain_local(str(tmp_path / "dir" / "alias.txt"))  # the file itself is a symlink
    assert not plain_local(str(tmp_path / "dir" / "missing.txt"))
    assert not plain_local("dir/a.txt") and not plain_local("//" + str(tmp_path / "dir" / "a.txt"))
    # The same file, with its folder listed as an NFS mount: not on the loop.
    remote = tmp_path / "mountinfo"
    remote.write_text(f"29 1 8:1 / / rw - ext4 /dev/sda1 rw\n112 29 0:49 / {tmp_path / 'dir'} rw - nfs4 fs:/x rw\n")
    assert not plain_local(str(tmp_path / "dir" / "a.txt"), MountTable(str(remote)))


@pytest.mark.anyio
async def test_run_nonblocking_runs_on_the_loop_and_moves_to_a_thread_on_blocking():
    ran: list[tuple[bool, bool]] = []  # (on the loop's thread, whether it raised Blocking)

    def body(block: bool) -> str:
        on_loop_thread = threading.current_thread() is threading.main_thread()
        ran.append((on_loop_thread, block and on_loop_thread))
        if block and on_loop_thread:
            raise Blocking("a remote path")
        return "done"

    assert await run_nonblocking(lambda: body(False)) == "done"
    assert ran == [(True, False)]
    ran.clear()
    assert await run_nonblocking(lambda: body(True)) == "done"
    assert ran == [(True, True), (False, False)]  # started on the loop, then again from the start in a thread


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("unshare") is None, reason="Linux mounts")
def test_the_table_is_read_again_when_a_mount_appears(tmp_path: Path):
    """In a mount namespace of its own: a file system mounted after the first look is seen on the next."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    script = (
        "import subprocess, sys\n"
        "from nexus_core.fs.nonblocking import MountTable\n"
        "table = MountTable()\n"
        f"before = table.types({str(folder)!r})\n"
        f"subprocess.run(['mount', '-t', 'ramfs', 'none', {str(folder)!r}], check=True)\n"
        f"after = table.types({str(folder)!r})\n"
        "print('ramfs' in before, after[-1])\n"
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])},
    )
    if done.returncode != 0 and ("unshare" in done.stderr or "mount" in done.stderr):
        pytest.skip(f"no mount namespace here: {done.stderr.strip()[-200:]}")
    assert done.stdout.split() == ["False", "ramfs"], done.stderr


def test_a_forked_child_watches_the_mount_table_with_its_own_descriptor():
    """Change reports belong to the open file, which a fork shares: one process would consume the other's."""
    assert MOUNTS.local(str(Path(__file__).parent)) in (True, False)  # the table is open in this process
    watched = MOUNTS._fd
    pid = os.fork()
    if pid == 0:  # the child: a table of its own, opened on first use
        fresh = MOUNTS._poll is None
        MOUNTS.remote()
        os._exit(0 if fresh and MOUNTS._fd >= 0 else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert MOUNTS._fd == watched
