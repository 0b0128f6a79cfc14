"""Sizes as polynomials in the batch b (and the sequence length s), fitted exactly.

Basis: 1, b (and s, bs, s^2, bs^2 with a sequence length): a tensor's bytes or an op's FLOPs are
linear in the batch and at most quadratic in the length (attention scores b*h*s*s). The fit uses
exact rational arithmetic on points (b1, b2) x (s1, s2, s3); every further probe must then be
matched exactly, or the value is reported as not polynomial.
"""
from fractions import Fraction

MONOMIALS_B = ("1", "b")
MONOMIALS_BS = ("1", "b", "s", "bs", "ss", "bss")


def _lagrange3(xs, ys):
    """Coefficients (c0, c1, c2) of the quadratic through three points."""
    x0, x1, x2 = (Fraction(x) for x in xs)
    y0, y1, y2 = (Fraction(y) for y in ys)
    # divided differences
    d01 = (y1 - y0) / (x1 - x0)
    d12 = (y2 - y1) / (x2 - x1)
    c2 = (d12 - d01) / (x2 - x0)
    c1 = d01 - c2 * (x0 + x1)
    c0 = y0 - c1 * x0 - c2 * x0 * x0
    return c0, c1, c2


def _line(xs, ys):
    x0, x1 = (Fraction(x) for x in xs)
    y0, y1 = (Fraction(y) for y in ys)
    c1 = (y1 - y0) / (x1 - x0)
    return y0 - c1 * x0, c1


def fit_points(with_seq, b_values, s_values):
    """The fit points, in the order fit() expects their values."""
    if not with_seq:
        return [(b, None) for b in b_values[:2]]
    return [(b, s) for b in b_values[:2] for s in s_values[:3]]


def fit(with_seq, points, values):
    """{monomial: Fraction} through the values at fit_points(...)."""
    if not with_seq:
        c0, c1 = _line([p[0] for p in points], values)
        return {"1": c0, "b": c1}
    b1, b2 = points[0][0], points[3][0]
    s_vals = [p[1] for p in points[:3]]
    q1 = _lagrange3(s_vals, values[:3])
    q2 = _lagrange3(s_vals, values[3:6])
    out = {}
    for power, name_const, name_b in ((0, "1", "b"), (1, "s", "bs"), (2, "ss", "bss")):
        c0, c1 = _line([b1, b2], [q1[power], q2[power]])
        out[name_const], out[name_b] = c0, c1
    return out


def evaluate(poly, b, s):
    s = s or 0
    terms = {"1": 1, "b": b, "s": s, "bs": b * s, "ss": s * s, "bss": b * s * s}
    return sum(c * terms[m] for m, c in poly.items())


def to_json(poly):
    """A number when constant, else {monomial: coefficient} without zero terms."""
    clean = {m: c for m, c in poly.items() if c != 0}
    if not clean:
        return 0
    def num(c):
        return int(c) if c.denominator == 1 else float(c)
    if list(clean) == ["1"]:
        return num(clean["1"])
    return {m: num(c) for m, c in clean.items()}
