"""The package as `pip install ./python` makes it (issue 38): its distribution name is not
upstream PTXBench's, the wheel carries the schemas and the PEP 561 marker, and the README's
schema example works from the installed copy alone (no checkout on the path, no
$PTXBENCH_SCHEMAS)."""

import glob
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

from _support import PYTHON_DIR, SCHEMAS

NETWORK_WORDS = ("Could not find a version", "No matching distribution", "Network is unreachable",
                 "Temporary failure in name resolution", "Max retries exceeded")


def build_wheel(folder):
    """The wheel pip builds from python/ (setuptools fetched by pip's build isolation)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        raise unittest.SkipTest("pip is not installed for " + sys.executable)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", folder,
                           PYTHON_DIR], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        if any(w in proc.stderr for w in NETWORK_WORDS):
            raise unittest.SkipTest("pip cannot reach a package index to fetch setuptools: " +
                                    proc.stderr.strip().splitlines()[-1])
        raise AssertionError("pip wheel failed:\n" + proc.stderr[-2000:])
    wheels = glob.glob(os.path.join(folder, "*.whl"))
    if len(wheels) != 1:
        raise AssertionError("expected one wheel, found %r" % wheels)
    return wheels[0]


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.wheel = build_wheel(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_distribution_is_not_upstreams(self):
        self.assertTrue(os.path.basename(self.wheel).startswith("ptxbench_client-"), self.wheel)

    def test_it_carries_every_schema_and_the_typed_marker(self):
        names = set(zipfile.ZipFile(self.wheel).namelist())
        self.assertIn("ptxbench/py.typed", names)
        for schema in sorted(os.listdir(SCHEMAS)):
            self.assertIn("ptxbench/schemas/" + schema, names)
        with zipfile.ZipFile(self.wheel) as z:
            with open(os.path.join(SCHEMAS, "run.schema.json"), "rb") as f:
                self.assertEqual(z.read("ptxbench/schemas/run.schema.json"), f.read())

    def test_the_installed_copy_finds_its_schemas_alone(self):
        target = os.path.join(self.tmp.name, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        target, self.wheel], check=True, capture_output=True, timeout=300)
        env = {k: v for k, v in os.environ.items() if k not in ("PTXBENCH_SCHEMAS", "PYTHONPATH")}
        env["PYTHONPATH"] = target
        code = ("import os; from ptxbench import schema\n"
                "assert schema.schema_dir().startswith(%r), schema.schema_dir()\n"
                "for name in schema.SCHEMAS: schema.load(name)\n"
                "try:\n"
                "    schema.check({'status': 'NOT_A_STATUS'}, 'evaluation-record')\n"
                "except schema.ValidationError:\n"
                "    print('ok')\n" % target)
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.tmp.name,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "ok")


if __name__ == "__main__":
    unittest.main()
