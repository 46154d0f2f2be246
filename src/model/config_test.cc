#include "model/config.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(ModelConfig, ParsesQwen3MoeAndVlmWrapper) {
  auto c = ParseModelConfig(R"({"model_type":"qwen3_moe","hidden_size":64,"num_hidden_layers":3,
    "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"num_experts":8,
    "num_experts_per_tok":2,"moe_intermediate_size":32,"decoder_sparse_step":2,"mlp_only_layers":[3],
    "eos_token_id":[5,6],"rope_theta":1e6})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->head_dim, 16);  // hidden / heads when absent (qwen3_moe)
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_FALSE(c->IsMoeLayer(0));  // (0+1) % 2 != 0
  EXPECT_TRUE(c->IsMoeLayer(1));
  EXPECT_FALSE(c->IsMoeLayer(3));  // mlp_only_layers
  auto w = ParseModelConfig(R"({"model_type":"qwen3_5_moe","tie_word_embeddings":false,"text_config":{
    "model_type":"qwen3_5_moe_text","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":2,
    "vocab_size":10,"head_dim":16,"rope_parameters":{"rope_type":"default","rope_theta":5000,"partial_rotary_factor":0.25}}})", "w.json");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->model_type, "qwen3_5_moe");
  EXPECT_EQ(w->hidden_size, 32);
  EXPECT_EQ(w->rope_theta, 5000);
  EXPECT_EQ(w->partial_rotary_factor, 0.25);
  auto q3 = ParseModelConfig(R"({"model_type":"qwen3","hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10})", "q.json");
  ASSERT_TRUE(q3.ok());
  EXPECT_EQ(q3->head_dim, 128);  // transformers' Qwen3Config default
}

TEST(ModelConfig, MtpFields) {
  const std::string base = R"("hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10)";
  auto none = ParseModelConfig("{" + base + "}", "c.json");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->mtp_num_hidden_layers.has_value());  // unset: the loader looks for mtp.fc.weight
  auto q35 = ParseModelConfig(R"({"model_type":"qwen3_5_moe","text_config":{)" + base +
                                  R"(,"mtp_num_hidden_layers":1,"mtp_use_dedicated_embeddings":false}})", "c.json");
  ASSERT_TRUE(q35.ok()) << q35.status().message();
  EXPECT_EQ(q35->mtp_num_hidden_layers, 1);
  EXPECT_FALSE(q35->mtp_use_dedicated_embeddings);
  auto next = ParseModelConfig("{" + base + R"(,"num_nextn_predict_layers":2})", "c.json");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->mtp_num_hidden_layers, 2);
  auto both = ParseModelConfig("{" + base + R"(,"num_nextn_predict_layers":2,"mtp_num_hidden_layers":0})", "c.json");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->mtp_num_hidden_layers, 0);
  auto neg = ParseModelConfig("{" + base + R"(,"mtp_num_hidden_layers":-1})", "c.json");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("mtp_num_hidden_layers"), std::string::npos) << neg.status().message();
}

TEST(ModelConfig, ClearErrors) {
  auto expect = [](const std::string& json, const std::string& fragment) {
    auto c = ParseModelConfig(json, "cfg.json");
    ASSERT_FALSE(c.ok()) << json;
    EXPECT_NE(c.status().message().find(fragment), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("cfg.json"), std::string::npos);
  };
  expect("not json", "not valid JSON");
  expect("[]", "expected a JSON object");
  expect(R"({"model_type":"qwen3"})", "missing required field \"hidden_size\"");
  expect(R"({"hidden_size":"64","num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10})", "must be an integer");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":10})", "not a multiple");
  expect(R"({"hidden_size":64,"num_hidden_layers":0,"num_attention_heads":4,"vocab_size":10})", "\"num_hidden_layers\" is 0, must be in [1, 4096]");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"rope_scaling":{"rope_type":"yarn"}})", "not supported");
  // The older spelling, which transformers reads too: refused, not taken for default RoPE.
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"rope_scaling":{"type":"yarn","factor":4.0}})", "rope_type \"yarn\" is not supported");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"rope_scaling":{"type":"linear","factor":2.0}})", "not supported");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"num_experts":4,"num_experts_per_tok":5})", "num_experts_per_tok");
}

// Every number that sizes memory or indexes it is range-checked at load, with
// the field named: partial_rotary_factor 4.0 once corrupted the heap on the
// first chat (RoPE past the head), -1.0 aborted, and an eos id of 2^32 + 5
// became 5.
TEST(ModelConfig, RangeChecksNameTheField) {
  auto expect = [](const std::string& fields, const std::string& fragment) {
    const std::string json = R"({"model_type":"qwen3_moe","hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":100,"num_experts":4,
      "num_experts_per_tok":2,"moe_intermediate_size":32)" + fields + "}";
    auto c = ParseModelConfig(json, "cfg.json");
    ASSERT_FALSE(c.ok()) << fields;
    EXPECT_NE(c.status().message().find(fragment), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("cfg.json"), std::string::npos);
  };
  expect(R"(,"partial_rotary_factor":4.0)", "partial_rotary_factor must be in (0, 1], got 4");
  expect(R"(,"partial_rotary_factor":-1.0)", "partial_rotary_factor must be in (0, 1], got -1");
  expect(R"(,"rope_parameters":{"partial_rotary_factor":0.0})", "partial_rotary_factor must be in (0, 1]");
  expect(R"(,"partial_rotary_factor":0.0625)", "1 rotary dims; RoPE needs an even number");  // 16 x 1/16
  expect(R"(,"head_dim":1000000)", "\"head_dim\" is 1000000, must be in [1, 4096]");
  expect(R"(,"hidden_size":18446744073709551615)", "\"hidden_size\" value 18446744073709551615 is out of range");
  expect(R"(,"vocab_size":4294967296)", "\"vocab_size\" is 4294967296");
  expect(R"(,"num_experts":1000000)", "\"num_experts\" is 1000000");
  expect(R"(,"moe_intermediate_size":0)", "\"moe_intermediate_size\" is 0");
  expect(R"(,"eos_token_id":4294967301)", "\"eos_token_id\" value 4294967301 is not a token id");
  expect(R"(,"eos_token_id":[1,-3])", "\"eos_token_id\" value -3 is not a token id");
  expect(R"(,"eos_token_id":100)", "eos_token_id 100 is outside the vocabulary [0, vocab_size 100)");
  expect(R"(,"bos_token_id":250)", "bos_token_id 250 is outside the vocabulary");
  expect(R"(,"layer_types":["full_attention"])", "layer_types has 1 entries for 2 layers");
  expect(R"(,"rms_norm_eps":0)", "rms_norm_eps must be in (0, 1)");
  expect(R"(,"max_position_embeddings":-1)", "\"max_position_embeddings\" is -1");
  // A hybrid model's linear-attention layers need their shapes.
  expect(R"(,"layer_types":["linear_attention","full_attention"],"linear_num_key_heads":2,
    "linear_num_value_heads":3,"linear_key_head_dim":8,"linear_value_head_dim":8,"linear_conv_kernel_dim":4)",
         "linear_num_value_heads 3 is not a multiple of linear_num_key_heads 2");
  expect(R"(,"full_attention_interval":2,"linear_num_key_heads":2,"linear_num_value_heads":2,
    "linear_key_head_dim":8,"linear_value_head_dim":8)", "\"linear_conv_kernel_dim\" is 0");
  // The boundaries themselves are accepted.
  auto ok = ParseModelConfig(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"head_dim":16,
    "vocab_size":100,"partial_rotary_factor":1.0,"eos_token_id":[0,99],"bos_token_id":99})", "ok.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->RotaryDim(), 16);
  EXPECT_EQ(ok->eos_token_ids, (std::vector<int32_t>{0, 99}));
}

}  // namespace
}  // namespace tern
