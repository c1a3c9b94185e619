"""Both bundled specs parse and type-check."""

from checker.language.load import bundled_spec_names, load_spec


def test_bundled_specs_check():
    assert set(bundled_spec_names()) >= {"acl", "cupva"}
    for name in ("acl", "cupva"):
        spec = load_spec(name)
        assert spec.rules and spec.calls
