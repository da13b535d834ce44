"""One release everywhere (CHANGELOG.md; issue 37): every program of this build answers
--version with one line of one shape, `<program> <release> (git <commit>)` or
`<program> <release> (no git commit)`, all with the release of the top-level CMakeLists.txt; and
every flexcsi image tag the manifests name is that release (the tests' upgrade overlay adds a
suffix to it), since scripts/build-image.sh tags the image with it. The commits are not compared:
each is the one of the last configure before that program was linked, so a partial build of a
shared tree leaves them apart (a full build, as CI's, makes them one).

Usage: versions_agree_test.py REPO RELEASE PROGRAM=PATH...
"""
import glob
import os
import re
import subprocess
import sys
import unittest

import yaml

LINE = re.compile(r"^(?P<program>\S+) (?P<release>[0-9]+\.[0-9]+\.[0-9]+) "
                  r"\((?:git (?P<commit>[0-9a-f]{7,40})|no git commit)\)\n$")


class EveryProgramAnswersVersion(unittest.TestCase):
    def test_one_line_of_one_shape_naming_the_release(self):
        for name, path in PROGRAMS.items():
            with self.subTest(program=name):
                run = subprocess.run([path, "--version"], capture_output=True, text=True,
                                     timeout=60)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertEqual(run.stderr, "")
                line = LINE.match(run.stdout)
                self.assertIsNotNone(line, "%s --version printed %r" % (name, run.stdout))
                self.assertEqual(line["program"], name)
                self.assertEqual(line["release"], RELEASE)


class ManifestsNameTheRelease(unittest.TestCase):
    def test_every_flexcsi_image_tag_is_the_release(self):
        found = 0
        for path in sorted(glob.glob(os.path.join(REPO, "deploy", "kubernetes", "**", "*.yaml"),
                                     recursive=True) +
                           glob.glob(os.path.join(REPO, "tests", "cluster", "deploy", "**",
                                                  "*.yaml"), recursive=True)):
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
            for doc in docs:
                for image in doc.get("images", []) if doc.get("kind") == "Kustomization" else []:
                    if image.get("name") in ("flexcsi", "localhost/flexcsi") and "newTag" in image:
                        found += 1
                        tag = str(image["newTag"])
                        self.assertTrue(tag == RELEASE or tag.startswith(RELEASE + "-"),
                                        "%s: newTag %s, the release is %s" % (path, tag, RELEASE))
            with open(path) as f:
                for image in re.findall(r"image: (?:localhost/)?flexcsi:(\S+)", f.read()):
                    found += 1
                    self.assertEqual(image, RELEASE, path)
        self.assertGreater(found, 0, "no flexcsi image tag found: did the manifests move?")


if __name__ == "__main__":
    REPO, RELEASE = sys.argv[1], sys.argv[2]
    PROGRAMS = dict(arg.split("=", 1) for arg in sys.argv[3:])
    unittest.main(argv=sys.argv[:1], verbosity=2)
