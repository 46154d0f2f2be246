// greedy_ids: greedy decoding with llama.cpp's C API from given prompt ids, for comparing token ids
// and logits with `tern generate --prompt-ids ... --temperature 0 --logits-out`.
//
//   greedy_ids MODEL.gguf IDS(comma-separated) N_TOKENS [THREADS] [LOGITS.f32]
//
// Prints the generated ids on one line ("ids: a,b,c"), then per step the argmax, the runner-up and
// the top-1 minus top-2 logit margin (near-ties on random-weight models are where two correct
// engines may differ). LOGITS.f32, if given, receives float32 [N_TOKENS, vocab], row i being the
// logits that chose generated token i. Built against a llama.cpp build by check_greedy.sh.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char ** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf IDS N_TOKENS [THREADS] [LOGITS.f32]\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> ids;
    for (std::string s = argv[2]; !s.empty();) {
        const size_t comma = s.find(',');
        ids.push_back(std::atoi(s.substr(0, comma).c_str()));
        s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
    const int n_gen = std::atoi(argv[3]);
    const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
    FILE * logits_out = argc > 5 ? std::fopen(argv[5], "wb") : nullptr;

    llama_log_set([](ggml_log_level level, const char * text, void *) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
    }, nullptr);
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { std::fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = ids.size() + n_gen + 8;
    cp.n_batch = cp.n_ubatch = ids.size() > 512 ? ids.size() : 512;
    cp.n_threads = cp.n_threads_batch = threads;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { std::fprintf(stderr, "cannot create a context\n"); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    std::vector<llama_token> out;
    std::vector<std::string> steps;
    llama_token next = 0;
    for (int i = 0; i < n_gen; ++i) {
        llama_batch batch = i == 0 ? llama_batch_get_one(ids.data(), ids.size()) : llama_batch_get_one(&next, 1);
        if (llama_decode(ctx, batch) != 0) { std::fprintf(stderr, "decode failed at step %d\n", i); return 1; }
        const float * logits = llama_get_logits_ith(ctx, -1);
        if (logits_out) std::fwrite(logits, sizeof(float), n_vocab, logits_out);
        int best = 0, second = -1;
        for (int v = 1; v < n_vocab; ++v) {
            if (logits[v] > logits[best]) { second = best; best = v; }
            else if (second < 0 || logits[v] > logits[second]) second = v;
        }
        next = best;
        out.push_back(best);
        char line[128];
        std::snprintf(line, sizeof line, "step %2d: %6d (runner-up %6d, margin %.5f)", i, best, second,
                      logits[best] - logits[second]);
        steps.push_back(line);
    }
    std::printf("ids:");
    for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? "," : " ", out[i]);
    std::printf("\n");
    for (const auto & s : steps) std::printf("%s\n", s.c_str());
    if (logits_out) std::fclose(logits_out);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
