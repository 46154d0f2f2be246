// Seeded random strings that stress a tokenizer: words, contractions, digits,
// punctuation, whitespace runs (including \r\n, \t, U+0085, U+FEFF, U+00A0,
// U+3000), CJK, emoji with ZWJ, combining marks and other NFC-relevant
// sequences, accented Latin, other scripts, added tokens and partial ones,
// lone surrogates. Only characters assigned long ago are drawn (ranges:
// Unicode <= 6; emoji: <= 10), so the Unicode versions of the libraries
// compared (Oniguruma, PCRE2, utf8proc, unicode-normalization) agree.

// xorshift32 with a splitmix-style seed scramble.
export class Rng {
  constructor(seed) {
    let s = (seed ^ 0x9e3779b9) >>> 0;
    s = Math.imul(s ^ (s >>> 16), 0x85ebca6b) >>> 0;
    s = Math.imul(s ^ (s >>> 13), 0xc2b2ae35) >>> 0;
    this.s = (s ^ (s >>> 16)) >>> 0 || 1;
  }
  u32() {
    let x = this.s;
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    this.s = x;
    return x;
  }
  next() { return this.u32() / 4294967296; }
  int(n) { return Math.floor(this.next() * n); }
  pick(a) { return a[this.int(a.length)]; }
}

const WORDS = ('the of and to in is you that it he was for on are as with his they at be this ' +
  'have from or one had by word but not what all were we when your can said there use an each ' +
  'which she do how their if will up other about out many then them these so some her would ' +
  'make like him into time has look two more write go see number no way could people my than ' +
  'first water been call who oil its now find long down day did get come made may part tokenizer ' +
  'inference server Qwen model attention transformer expert routing quantization bfloat16 kernel ' +
  'naïve café façade résumé coöperate Zürich Ærøskøbing straße señor São Paulo déjà vu').split(' ');
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL",
  "'D", "'ſ", "n't", "'", "''", '"'];
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const WHITESPACE = [' ', ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', '\u0085',
  '\ufeff', '\u00a0', '\u3000', '\u2028', '\u2029', '\u000b', '\u000c', '\u200b', '\u2003',
  '\u202f', '\u205f', '\u1680', ' \n', '\n ', ' \t ', '\r\n\r\n', '    \n'];
const EMOJI = ['😀', '😂', '🙂', '👍', '👍🏽', '👋🏿', '❤️', '❤', '🔥', '🎉', '🚀', '🤖', '🇺🇸',
  '🇯🇵', '🏳️‍🌈', '👨‍👩‍👧‍👦', '👩‍💻', '🧑🏽‍🚀', '👁️‍🗨️', '✈️', '☕', '⭐', '✅', '©️', '1️⃣', '#️⃣'];
// NFC-relevant: decomposed accents, non-canonical mark order, singletons,
// Hangul jamo that compose, compatibility characters NFC keeps.
const NFC = ['e\u0301', 'E\u0301', 'a\u0300', 'o\u0308', 'u\u0308\u0301', 'c\u0327', 'n\u0303',
  's\u0323\u0307', 's\u0307\u0323', 'q\u0307\u0323', 'a\u0301\u0301', '\u0301', '\u0308x',
  '\u212b', '\u2126', '\u212a', '\u1100\u1161', '\u1100\u1161\u11a8', '\u1112\u1175',
  '\u0915\u093c', '\u0928\u093c', 'ﬁ', 'ﬀ', '²', '½', 'Ⅻ', '\u00c5', 'A\u030a', '\u0041\u0328\u0301',
  'i\u0307', '\u03b9\u0308\u0301', '\u1f00\u0345', 'ǅ', 'ǆ'];
const ACCENTED = 'àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßāăąćčďđēęěğīıłńňōőœřśşšťūůűźżžſ';
// [first, last] code point ranges of long-assigned letters and symbols.
const RANGES = [
  [0x4e00, 0x9fa5], [0x4e00, 0x4fff], [0x3041, 0x3096], [0x30a1, 0x30fa], [0xac00, 0xd7a3],
  [0x0391, 0x03a9], [0x03b1, 0x03c9], [0x0410, 0x044f], [0x05d0, 0x05ea], [0x0627, 0x064a],
  [0x0905, 0x0939], [0x0e01, 0x0e30], [0x10d0, 0x10fa], [0x0531, 0x0556], [0x2190, 0x21ff],
  [0x2200, 0x22ff], [0x2500, 0x257f], [0x2010, 0x2027], [0x20a0, 0x20b5], [0xff01, 0xff5e],
  [0xff61, 0xff9f], [0x2160, 0x2188], [0x00a1, 0x00ff], [0x0100, 0x017f], [0x0180, 0x024f],
  [0x0250, 0x02af], [0x0300, 0x036f], [0x3001, 0x3003], [0x3008, 0x3011], [0x2460, 0x24ff],
  [0x0660, 0x0669], [0x0966, 0x096f], [0xff10, 0xff19], [0x1e00, 0x1eff],
];

function randomCase(rng, w) {
  const r = rng.next();
  if (r < 0.6) return w;
  if (r < 0.85) return w.charAt(0).toUpperCase() + w.slice(1);
  if (r < 0.95) return w.toUpperCase();
  return [...w].map((c) => (rng.next() < 0.5 ? c.toUpperCase() : c)).join('');
}

function fromRange(rng, n) {
  const [a, b] = rng.pick(RANGES);
  let s = '';
  for (let i = 0; i < n; ++i) s += String.fromCodePoint(a + rng.int(b - a + 1));
  return s;
}

function partialToken(rng, t) {
  if (t.length < 2) return t;
  const r = rng.next();
  if (r < 0.4) return t.slice(0, 1 + rng.int(t.length - 1));
  if (r < 0.7) return t.slice(1 + rng.int(t.length - 1));
  return t.slice(0, t.length - 1) + ' ' + t.slice(t.length - 1);
}

function atom(rng, added) {
  const r = rng.next();
  if (r < 0.22) return randomCase(rng, rng.pick(WORDS));
  if (r < 0.27) return rng.pick(CONTRACTIONS);
  if (r < 0.33) {
    const n = 1 + rng.int(rng.next() < 0.8 ? 4 : 14);
    let s = '';
    for (let i = 0; i < n; ++i) s += String(rng.int(10));
    return s;
  }
  if (r < 0.40) {
    const n = 1 + rng.int(rng.next() < 0.8 ? 2 : 6);
    let s = '';
    for (let i = 0; i < n; ++i) s += PUNCT[rng.int(PUNCT.length)];
    return s;
  }
  if (r < 0.52) {
    const n = 1 + rng.int(3);
    let s = '';
    for (let i = 0; i < n; ++i) s += rng.pick(WHITESPACE);
    return s;
  }
  if (r < 0.60) return fromRange(rng, 1 + rng.int(rng.next() < 0.9 ? 4 : 20));
  if (r < 0.65) return rng.pick(EMOJI);
  if (r < 0.71) return rng.pick(NFC);
  if (r < 0.75) {
    let s = '';
    const n = 1 + rng.int(5);
    for (let i = 0; i < n; ++i) s += ACCENTED[rng.int(ACCENTED.length)];
    return s;
  }
  if (r < 0.83) {
    const t = rng.pick(added);
    return rng.next() < 0.65 ? t : partialToken(rng, t);
  }
  if (r < 0.86) return rng.pick(['<|im_start', '<|im_end', '<|', '|>', '<think', 'think>', '</',
    '<tool_call', '<｜', '｜>', '▁', '<|endoftext', '<|end']);
  if (r < 0.88) return String.fromCharCode(0xd800 + rng.int(0x800));  // lone surrogate
  if (r < 0.90) return String.fromCodePoint(1 + rng.int(0x1f));       // control character
  if (r < 0.93) return rng.pick(['\u00ad', '\u200d', '\u200c', '\u2060', '\u180e', '\u061c',
    '\u034f', '\ufe0f', '\u00b7', '\u0387', '\u037e']);
  return ' ' + randomCase(rng, rng.pick(WORDS));
}

// A random string of 1..10 atoms (occasionally up to 40).
export function randomText(rng, added) {
  const n = 1 + rng.int(rng.next() < 0.9 ? 10 : 40);
  let s = '';
  for (let i = 0; i < n; ++i) {
    s += atom(rng, added);
    if (rng.next() < 0.45) s += ' ';
  }
  return s;
}
