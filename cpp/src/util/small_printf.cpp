#include "util/small_printf.hpp"

#include <cstdint>
#include <cstring>

namespace trainmem {
namespace util {
namespace {

// Counts everything, stores what fits in n - 1 bytes (C's snprintf contract).
struct Out {
  char* buf;
  size_t n;
  size_t len = 0;
  void put(char c) {
    if (len + 1 < n) buf[len] = c;
    ++len;
  }
};

// The exact decimal value of a finite double's magnitude: 0.digits x 10^point (no leading zeros;
// len 0 for zero). A double is m x 2^e (IEEE 754 binary64): the integer m x 2^e for e >= 0, else
// m x 5^-e / 10^-e; either way a big integer's decimal digits (at most 767 of them).
struct Decimal {
  char digits[800];
  int len = 0;
  int point = 0;
};

void exact_decimal(uint64_t bits, Decimal* d) {
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  int e = -1074;  // subnormal
  if (biased != 0) {
    m |= uint64_t{1} << 52;
    e = biased - 1075;
  }
  if (m == 0) return;
  uint32_t limb[100];  // little-endian, base 10^9
  int n = 0;
  for (; m; m /= 1000000000) limb[n++] = static_cast<uint32_t>(m % 1000000000);
  for (int k = e < 0 ? -e : e; k > 0; k -= 13) {  // times 2^e or 5^-e, 13 factors at a time
    uint64_t f = 1;
    for (int j = 0; j < (k < 13 ? k : 13); ++j) f *= e < 0 ? 5 : 2;
    uint64_t carry = 0;
    for (int i = 0; i < n; ++i) {
      const uint64_t v = limb[i] * f + carry;
      limb[i] = static_cast<uint32_t>(v % 1000000000);
      carry = v / 1000000000;
    }
    for (; carry; carry /= 1000000000) limb[n++] = static_cast<uint32_t>(carry % 1000000000);
  }
  for (int i = n; i-- > 0;)
    for (uint32_t p = 100000000; p; p /= 10) {
      const char c = static_cast<char>('0' + limb[i] / p % 10);
      if (d->len || c != '0') d->digits[d->len++] = c;
    }
  d->point = d->len + (e < 0 ? e : 0);
}

// Keeps the first `keep` digits, rounding half to even on the exact value.
void round_to(Decimal* d, int keep) {
  if (keep >= d->len) return;
  if (keep < 0) {  // below half a unit of the kept place
    d->len = 0;
    return;
  }
  bool up = d->digits[keep] > '5';
  if (d->digits[keep] == '5') {
    up = keep > 0 && (d->digits[keep - 1] - '0') % 2 == 1;
    for (int i = keep + 1; i < d->len; ++i) up = up || d->digits[i] != '0';
  }
  d->len = keep;
  if (!up) return;
  int i = keep - 1;
  while (i >= 0 && d->digits[i] == '9') d->digits[i--] = '0';
  if (i >= 0) {
    ++d->digits[i];
  } else {  // 99.9 -> 100: "1" and the zeros need no digit
    d->digits[0] = '1';
    d->len = 1;
    ++d->point;
  }
}

char digit_at(const Decimal& d, int i) { return i >= 0 && i < d.len ? d.digits[i] : '0'; }

// A rounded Decimal in fixed (`exp` false) or exponential notation with `prec` digits after the
// point; `strip`: %g's removal of trailing zeros. Returns the length written to s.
int render(const Decimal& d, bool exp, int prec, bool strip, char* s) {
  int k = 0;
  const int x = d.len ? d.point - 1 : 0;
  int first = 0;  // index of the first digit shown
  if (exp) {
    s[k++] = digit_at(d, 0);
    first = 1;
  } else if (d.len == 0 || d.point <= 0) {
    s[k++] = '0';
    first = d.len ? d.point : 0;
  } else {
    for (int i = 0; i < d.point; ++i) s[k++] = digit_at(d, i);
    first = d.point;
  }
  if (strip)
    while (prec > 0 && digit_at(d, first + prec - 1) == '0') --prec;
  if (prec > 0) {
    s[k++] = '.';
    for (int i = 0; i < prec; ++i) s[k++] = digit_at(d, first + i);
  }
  if (exp) {
    s[k++] = 'e';
    s[k++] = x < 0 ? '-' : '+';
    const int a = x < 0 ? -x : x;
    if (a >= 100) s[k++] = static_cast<char>('0' + a / 100);
    s[k++] = static_cast<char>('0' + a / 10 % 10);
    s[k++] = static_cast<char>('0' + a % 10);
  }
  return k;
}

int format_float(uint64_t bits, char conv, int prec, char* s) {
  if (((bits >> 52) & 0x7ff) == 0x7ff) {
    std::memcpy(s, bits & ((uint64_t{1} << 52) - 1) ? "nan" : "inf", 3);
    return 3;
  }
  Decimal d;
  exact_decimal(bits, &d);
  if (conv == 'f') {
    round_to(&d, d.point + prec);
    return render(d, false, prec, false, s);
  }
  if (conv == 'e') {
    round_to(&d, prec + 1);
    return render(d, true, prec, false, s);
  }
  const int P = prec == 0 ? 1 : prec;  // %g (C11 7.21.6.1p8)
  round_to(&d, P);
  const int X = d.len ? d.point - 1 : 0;
  return P > X && X >= -4 ? render(d, false, P - 1 - X, true, s) : render(d, true, P - 1, true, s);
}

int format_int(uint64_t v, char conv, int prec, char* s) {
  const unsigned base = conv == 'x' || conv == 'X' ? 16 : 10;
  char tmp[24];
  int k = 0;
  for (; v; v /= base) tmp[k++] = "0123456789abcdef0123456789ABCDEF"[v % base + (conv == 'X') * 16];
  int n = 0;
  for (int i = k; i < prec; ++i) s[n++] = '0';
  while (k) s[n++] = tmp[--k];
  return n;
}

}  // namespace

int small_vsnprintf(char* buf, size_t n, const char* fmt, va_list ap) {
  Out out{buf, n};
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%' || p[1] == '%') {
      out.put(*p);
      p += *p == '%';
      continue;
    }
    ++p;
    bool zero = false;
    while (*p == '0') zero = true, ++p;
    int width = 0;
    while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    int prec = -1;
    if (*p == '.')
      for (prec = 0, ++p; *p >= '0' && *p <= '9'; ++p) prec = prec * 10 + (*p - '0');
    if (prec > 300) prec = -2;  // more than body holds: unsupported below
    int len = 0;                // -2 hh, -1 h, 0, 1 l, 2 ll, 3 z
    if (*p == 'h') len = p[1] == 'h' ? (++p, -2) : -1;
    if (*p == 'l') len = p[1] == 'l' ? (++p, 2) : 1;
    if (*p == 'z') len = 3;
    if (len != 0) ++p;
    const char conv = *p;
    const bool integer =
        prec >= -1 && (conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x' || conv == 'X');
    char body[1100];
    int k = 0;
    bool negative = false;
    if (integer) {
      uint64_t v = len == 1   ? va_arg(ap, unsigned long)
                   : len == 2 ? va_arg(ap, unsigned long long)
                   : len == 3 ? va_arg(ap, size_t)
                              : va_arg(ap, unsigned);
      const bool is_signed = conv == 'd' || conv == 'i';
      if (len == -2) v = is_signed ? static_cast<uint64_t>(static_cast<signed char>(v)) : v & 0xff;
      if (len == -1) v = is_signed ? static_cast<uint64_t>(static_cast<short>(v)) : v & 0xffff;
      if (len <= 0 && is_signed)
        v = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int>(v)));
      if (is_signed && static_cast<int64_t>(v) < 0) negative = true, v = 0 - v;
      k = format_int(v, conv, prec < 0 ? 1 : prec, body);
      if (prec >= 0) zero = false;  // C: with a precision, '0' is ignored
    } else if ((conv == 'f' || conv == 'e' || conv == 'g') && len == 0 && prec >= -1) {
      const double v = va_arg(ap, double);
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      negative = bits >> 63;
      k = format_float(bits, conv, prec < 0 ? 6 : prec, body);
      if (body[0] == 'n' || body[0] == 'i') zero = false;
    } else if (conv == 's' && len == 0 && width == 0 && prec >= -1) {
      for (const char* s = va_arg(ap, const char*); *s && (prec < 0 || prec-- > 0); ++s)
        out.put(*s);
      continue;
    } else {
      static const char kUnsupported[] = "<unsupported format>";
      out.len = 0;
      for (const char* u = kUnsupported; *u; ++u) out.put(*u);
      break;
    }
    const int shown = k + negative;
    if (!zero)
      for (int i = shown; i < width; ++i) out.put(' ');
    if (negative) out.put('-');
    if (zero)
      for (int i = shown; i < width; ++i) out.put('0');
    for (int i = 0; i < k; ++i) out.put(body[i]);
  }
  if (n) buf[out.len < n ? out.len : n - 1] = '\0';
  return static_cast<int>(out.len);
}

}  // namespace util
}  // namespace trainmem
