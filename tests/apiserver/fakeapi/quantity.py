"""resource.Quantity parsing (k8s.io/apimachinery/pkg/api/resource), enough to compare sizes."""
import re
from fractions import Fraction

_SUFFIX = {
    "": 1, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
    "Ei": 2 ** 60, "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6),
    "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12,
    "P": 10 ** 15, "E": 10 ** 18,
}
_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
                 r"[eE][+-]?[0-9]+)?$")


def parse(text):
    """Returns the value as a Fraction, or None when text is not a valid quantity."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return Fraction(text)
    if not isinstance(text, str):
        return None
    m = _RE.match(text.strip())
    if not m:
        return None
    number = Fraction(m.group(1))
    suffix = m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]
