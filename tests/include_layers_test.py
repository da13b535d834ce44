#!/usr/bin/env python3
"""The top-level folders are the architecture, and includes run one way: a product folder
includes only from its own layer's folder or from folders below it, never from one above, and
never from tests/ or bench/. Unit tests beside the code (*_test.cc, fuzz/) may also include the
test support under tests/ (tests/support, the fake API server) and bench's data generator."""
import os
import re
import sys
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# Lower layers first; a folder may include from its own folder and from any lower layer.
LAYERS = [
    ("common", "proto"),
    ("translator", "kube", "drivers", "flexexec"),
    ("bridge", "migrate"),
    ("controller",),
    ("cli",),
]
LAYER = {folder: i for i, folders in enumerate(LAYERS) for folder in folders}
TEST_ONLY = ("tests", "bench")
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def is_test_file(relpath):
    parts = relpath.split(os.sep)
    return parts[-1].endswith("_test.cc") or "fuzz" in parts[:-1]


def quoted_includes(repo, top):
    """(path relative to repo, line number, included path) of every quoted #include in the .cc
    and .h files under repo/top, build trees and hidden folders left out."""
    for root, dirs, files in os.walk(os.path.join(repo, top)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in files:
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, repo)
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = QUOTED_INCLUDE.match(line)
                    if m:
                        yield rel, n, m.group(1)


def violations(repo=REPO):
    found = []
    for folder in LAYER:
        for rel, n, included in quoted_includes(repo, folder):
            target = included.split("/")[0] if "/" in included else None
            if target in TEST_ONLY:
                if not is_test_file(rel):
                    found.append("%s:%d: product code includes %s/" % (rel, n, target))
            elif target in LAYER and target != folder and LAYER[target] >= LAYER[folder]:
                found.append("%s:%d: %s/ includes from %s/, not below it"
                             % (rel, n, folder, target))
    return found


def test_only_headers(repo=REPO):
    """Headers in product folders that only test code includes (a header with its own .cc
    beside it is the interface of product code, whoever includes it)."""
    includers = {}
    for rel, _, included in quoted_includes(repo, ""):
        includers.setdefault(included, []).append(rel)
    found = []
    for header, users in sorted(includers.items()):
        if header.split("/")[0] not in LAYER or not os.path.exists(os.path.join(repo, header)):
            continue
        if os.path.exists(os.path.join(repo, header[:-2] + ".cc")):
            continue
        if all(is_test_file(u) or u.split(os.sep)[0] in TEST_ONLY for u in users):
            found.append("%s (included by %s)" % (header, ", ".join(users)))
    return found


class IncludeLayersTest(unittest.TestCase):
    def test_no_folder_includes_from_one_above_it_and_product_code_not_from_tests(self):
        self.assertEqual(violations(), [])

    def test_test_only_headers_live_under_tests(self):
        self.assertEqual(test_only_headers(), [])


if __name__ == "__main__":
    if "--list" in sys.argv:
        print("\n".join(violations() + test_only_headers()) or "no violations")
        sys.exit(0)
    unittest.main()
