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
  expect(R"({"hidden_size":64,"num_hidden_layers":0,"num_attention_heads":4,"vocab_size":10})", "must be positive");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"rope_scaling":{"rope_type":"yarn"}})", "not supported");
  expect(R"({"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"vocab_size":10,"num_experts":4,"num_experts_per_tok":5})", "num_experts_per_tok");
}

}  // namespace
}  // namespace tern
