// Variants of tern's synthetic tokenizer that switch on the tokenizer.json
// features the real Qwen3 / DeepSeek-V3 / gpt-oss files leave unused, so the
// goldens check them against Hugging Face too: ByteLevel with the GPT-2 regex
// and a prefix space, legacy "a b" merges, TemplateProcessing, every Split
// behaviour, invert, literal patterns, Digits, NFKC, ignore_merges,
// lstrip/rstrip/single_word and normalized added tokens, and a BPE without
// ByteLevel using unk/fuse_unk or byte_fallback.

const byteLevel = (addPrefixSpace, useRegex) => ({
  type: 'ByteLevel', add_prefix_space: addPrefixSpace, trim_offsets: true, use_regex: useRegex,
});
const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
const added = (id, content, o = {}) => ({
  id, content, single_word: !!o.single_word, lstrip: !!o.lstrip, rstrip: !!o.rstrip,
  normalized: o.normalized ?? !o.special, special: !!o.special,
});
const template = (single, specials) => ({
  type: 'TemplateProcessing', single, pair: single,
  special_tokens: Object.fromEntries(specials.map(([name, id]) => [name, { id: name, ids: [id], tokens: [name] }])),
});
const special = (id) => ({ SpecialToken: { id, type_id: 0 } });
const seqA = { Sequence: { id: 'A', type_id: 0 } };

// base: the parsed synthetic tokenizer.json. Returns [{name, json}].
export function makeVariants(base) {
  const vocabSize = Object.keys(base.model.vocab).length;
  const ids = Object.fromEntries(base.added_tokens.map((t) => [t.content, t.id]));
  const out = [];

  // GPT-2 style: ByteLevel does the splitting, legacy merges, BOS/EOS template.
  {
    const j = structuredClone(base);
    j.normalizer = null;
    j.pre_tokenizer = byteLevel(true, true);
    j.model.merges = base.model.merges.map(([a, b]) => `${a} ${b}`);
    j.post_processor = template([special('<|im_start|>'), seqA, special('<|im_end|>')],
      [['<|im_start|>', ids['<|im_start|>']], ['<|im_end|>', ids['<|im_end|>']]]);
    j.added_tokens.push(added(vocabSize + 9, '<|strip|>', { special: true, lstrip: true, rstrip: true }));
    j.added_tokens.push(added(vocabSize + 10, 'ask', { single_word: true, normalized: false }));
    j.added_tokens.push(added(vocabSize + 11, '<|lonly|>', { lstrip: true, normalized: false }));
    out.push({ name: 'variant_gpt2', json: j });
  }

  // Split behaviours, Digits, NFKC, ignore_merges, normalized added tokens.
  {
    const j = structuredClone(base);
    j.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFKC' }] };
    j.pre_tokenizer = {
      type: 'Sequence', pretokenizers: [
        split({ String: '--' }, 'Removed'),
        split({ Regex: '\\d+' }, 'MergedWithNext'),
        split({ Regex: '[,;]' }, 'MergedWithPrevious'),
        split({ Regex: '\\p{Lu}+' }, 'Contiguous', true),
        split({ Regex: '\\s' }, 'Isolated'),
        { type: 'Digits', individual_digits: true },
        byteLevel(false, true),
      ],
    };
    j.model.ignore_merges = true;
    j.post_processor = { type: 'Sequence', processors: [byteLevel(false, false),
      template([seqA, special('<|endoftext|>')], [['<|endoftext|>', ids['<|endoftext|>']]])] };
    for (const t of j.added_tokens) if (t.content === '<think>') t.normalized = true;
    j.added_tokens.push(added(vocabSize + 9, 'ﬁx', { normalized: true }));
    j.added_tokens.push(added(vocabSize + 10, '<|r|>', { rstrip: true, normalized: false }));
    out.push({ name: 'variant_split', json: j });
  }

  // No ByteLevel: characters looked up as they are; unknown ones become
  // <unk> (fused) in one variant and <0xXX> byte tokens in the other.
  for (const fallback of [false, true]) {
    const j = structuredClone(base);
    const vocab = j.model.vocab;
    let next = vocabSize;
    vocab['<unk>'] = next++;
    if (fallback) {
      for (let b = 0; b < 256; ++b) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = next++;
    }
    j.added_tokens = base.added_tokens.map((t, i) => ({ ...t, id: next + i }));
    j.normalizer = { type: 'NFC' };
    j.pre_tokenizer = split({ Regex: '\\s+' }, 'Removed');
    j.model.unk_token = '<unk>';
    j.model.fuse_unk = !fallback;
    j.model.byte_fallback = fallback;
    j.post_processor = null;
    j.decoder = null;
    out.push({ name: fallback ? 'variant_byte_fallback' : 'variant_unk', json: j });
  }
  return out;
}
