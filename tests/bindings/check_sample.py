"""The sample plugin's typed bindings: checked by `mypy --strict` and run (cargo xtask test
--only examples, part "stale bindings"). Keyword escaping: the registry's `import` method and
its `class` parameter are `import_` and a positional-only `class_`; nullability: Optional
results and fields are `X | None`; a static method (`Counter.parse`) is a `@staticmethod`
returning its class; a Python subclass calls the stub's `__init__`."""

import sample
import tether_ffi

counter = sample.Counter(start=5)
assert counter.increment_by() == 6 and counter.increment_by(by=3) == 9
assert sample.greet("bindings") == "hello, bindings"
assert sample.scale(6, 7) == 42
assert sample.make_counter(1).count == 1

parsed: sample.Counter = sample.Counter.parse("ff", radix=16)
assert parsed.count == 255 and sample.Counter.parse("12").count == 12
try:
    sample.Counter.parse("zz")
    raise AssertionError("parse('zz') should raise")
except tether_ffi.ValueError as e:
    assert '"zz" is not a base-10 number' in str(e), e

names = sample.Names()
missing: int | None = names.import_(2)
assert missing is None and names.label is None
names.label = "abc"
found = names.import_(2)
assert found is not None and found + 0 == 5, found
label: str | None = names.label
assert label == "abc"
names.label = None
assert names.label is None


class Tally(sample.Counter):
    """A Python subclass with its own constructor: the stub's `__init__` is what it calls."""

    def __init__(self, start: int, label: str) -> None:
        super().__init__(start=start)
        self.label = label


tally = Tally(3, "t")
assert isinstance(tally, sample.Counter) and tally.count == 3 and tally.label == "t"
assert tally.increment_by() == 4
print("sample bindings: ok")
