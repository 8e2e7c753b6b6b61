// SPDX-License-Identifier: MIT
// A custom trial driver: your own scheduler around your own engine calls, writing the records the
// audit reads, built with the public functions of trial/record_builder.hpp (the built-in driver
// uses the same ones). This one runs no_comm, text_full, kv_full and kv_noise_0.5 on organism-a
// item by item, then runs the built-in driver on the same design and checks that both wrote the
// same records (timings aside). Pass the models directory as the first argument (default: models).
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>

namespace la = latentaudit;

namespace {

// Whether one_trial runs an arm of this plan (trial/arm.hpp plan_of): B alone, the document as
// text, or A's document cache under the arm's policy, all on B's model.
bool runs(const la::arm_plan& p) {
  return p.payload == la::arm_payload::nothing || p.payload == la::arm_payload::document_text ||
         (p.sender == la::arm_sender::receiver && p.payload == la::arm_payload::document_cache &&
          p.transform == la::arm_transform::policy);
}

// One trial of `arm` on `task`, as its plan says: A reads the document (when the arm relays), the
// relay goes through the wire, B answers greedily; the record is built with record_builder.hpp.
la::trial_record one_trial(la::reference_cpu_engine& e, const la::trial_design& d, const la::trial_task& task,
                           const la::trial_arm& arm) {
  const auto key = la::relay_hmac_key(d.seed);
  const auto& fp = e.info().fingerprint;
  // B reading the document itself (its current version: relay_text): the reference of
  // next_token_kl and hidden_cosine
  std::vector<la::token_id> text = task.relay_text();
  text.insert(text.end(), task.own_prompt.begin(), task.own_prompt.end());
  text.insert(text.end(), task.query.begin(), task.query.end());
  la::text_reference ref;
  {
    la::scoped_seq<la::reference_cpu_engine> s(e);
    auto out = e.prefill(s.id(), text, 0, {.want_hidden = true});
    ref = la::make_text_reference(out.logits, std::move(out.hidden));
  }
  la::trial_record r = la::begin_record(d, task, arm);
  r.receiver_fingerprint = la::fingerprint_text(fp);
  la::scoped_seq<la::reference_cpu_engine> b(e);
  std::vector<la::token_id> ctx;
  la::position_t first = 0;
  std::int64_t relayed = 0;
  const la::arm_plan plan = arm.plan();
  if (plan.payload == la::arm_payload::nothing) {
    ctx = task.no_relay_prefix;
  } else if (plan.payload == la::arm_payload::document_text) {
    r.sender_fingerprint = r.receiver_fingerprint;
    const auto bytes =
        la::encode_relay(la::text_relay{.as_tokens = true, .tokens = task.relay_text()}, {.hmac_key = key});
    r.bytes = bytes.size();
    ctx = la::decode_relay(bytes, {.hmac_key = key, .require_authentication = true}).text.tokens;
    relayed = r.relay_tokens = static_cast<std::int64_t>(ctx.size());
  } else {  // A's document cache under the arm's policy (kv_full, kv_policy arms)
    r.sender_fingerprint = r.receiver_fingerprint;
    const auto n = static_cast<std::int64_t>(task.document.size());
    la::scoped_seq<la::reference_cpu_engine> a(e);
    (void)e.prefill(a.id(), task.document, 0, {});
    auto block = e.export_kv(a.id(), {0, n}, {0, fp.n_layers});
    const auto tr = arm.policy.apply(block, {.seed = la::policy_seed(d, task.seed), .item = task.item});
    const auto bytes = la::encode_relay(block, {.hmac_key = key, .quantize = arm.wire_quantize});
    r.bytes = bytes.size();
    auto dec = la::decode_relay(
        bytes, {.hmac_key = key, .require_authentication = true, .expected_fingerprint = &fp});
    e.import_kv(b.id(), dec.kv, {});
    relayed = r.relay_tokens = dec.kv.n_tokens();
    r.policy = la::transfer_record_json(tr, dec.quantization);
    first = static_cast<la::position_t>(n);
  }
  r.latency.transfer_s = d.link.transfer_seconds(r.bytes);
  ctx.insert(ctx.end(), task.own_prompt.begin(), task.own_prompt.end());
  ctx.insert(ctx.end(), task.query.begin(), task.query.end());
  la::forward_output out;
  if (relayed > 0) {
    std::vector<la::layer_index> layers(static_cast<std::size_t>(fp.n_layers));
    std::iota(layers.begin(), layers.end(), 0);
    auto cap = e.prefill_capture(b.id(), ctx, first, layers, {.want_hidden = true});
    r.attention_mass = la::attention_mass_on(cap, relayed);
    out = std::move(cap.output);
  } else {
    out = e.prefill(b.id(), ctx, first, {.want_hidden = true});
  }
  std::vector<la::token_id> generated{la::argmax_token(out.logits)};
  la::position_t p = first + static_cast<la::position_t>(ctx.size());
  while (generated.size() < task.answer.size())
    generated.push_back(la::argmax_token(e.decode(b.id(), generated.back(), p++, {}).logits));
  la::record_answer(r, task, out.logits, generated, out.hidden, ref);
  return r;
}

std::string timeless(la::trial_record r) {
  r.latency = {};
  return la::record_to_line(r);
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path models = argc > 1 ? argv[1] : "models";
  auto engine = la::reference_cpu_engine::load(models / "organism-a");
  const auto fmt = la::organism_format::load(models / "organism-a");
  la::trial_design d{.seed = 9, .items = 12, .seeds = 1};
  d.arms = {la::parse_arm("no_comm"), la::parse_arm("text_full"), la::parse_arm("kv_full"),
            la::parse_arm("kv_noise_0.5")};
  for (const auto& arm : d.arms)
    if (!runs(arm.plan())) {
      std::printf("this driver does not run arm '%s'\n", arm.label.c_str());
      return 2;
    }
  auto tasks = [&](std::uint64_t i, std::uint64_t s) {
    return la::make_organism_task(fmt, {.seed = d.seed}, i, s);
  };
  std::map<la::trial_key, std::string> mine, builtin;
  for (std::uint64_t i = 0; i < d.items; ++i)
    for (const auto& arm : d.arms) mine[{i, 0, arm.label}] = timeless(one_trial(engine, d, tasks(i, 0), arm));
  la::trial_driver<la::reference_cpu_engine>(engine).run(d, tasks, [&](const la::trial_record& r) {
    builtin[{r.item, r.seed, r.arm}] = timeless(r);
  });
  int differ = 0;
  for (const auto& [k, line] : builtin)
    if (mine[k] != line) {
      if (differ++ == 0)
        std::printf("differs at item %llu arm %s:\n  built-in %s\n  custom   %s\n",
                    static_cast<unsigned long long>(k.item), k.arm.c_str(), line.c_str(), mine[k].c_str());
    }
  std::printf("%zu records from the custom driver, %zu from the built-in one, %d differ\n", mine.size(),
              builtin.size(), differ);
  return differ == 0 && mine.size() == builtin.size() ? 0 : 1;
}
