// Console output must read exactly like Keras 3, so these tests compare whole strings written by
// hand from Keras's progbar.py / summary_utils.py rules, driven by a fake clock.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "model/summary_format.h"
#include "tandem/callbacks.h"

using tandem::Logs;

namespace {

const std::string BOLD = "\x1b[1m", RST = "\x1b[0m", GRN = "\x1b[32m", GRY = "\x1b[37m";
const std::string FULL_BAR = GRN + "━━━━━━━━━━━━━━━━━━━━" + RST + GRY + RST;  // 20 done, 0 left

// A ProgbarLogger writing to a string, with time set by the test.
struct Harness {
  double t = 0;
  std::ostringstream out;
  tandem::ProgbarLogger bar{out, [this] { return t; }};
  explicit Harness(int epochs, int64_t steps, int verbose) { bar.set_params({epochs, steps, verbose}); }
  std::string text() const { return out.str(); }
  // What is on screen after the last redraw: the text after the final '\r'.
  std::string last_draw() const { return text().substr(text().rfind('\r') + 1); }
};

// Runs a one-epoch fit of `steps` batches ending at the given times, with the same logs.
void run_epoch(Harness& h, int epoch, const std::vector<double>& batch_times, const Logs& logs) {
  h.bar.on_epoch_begin(epoch, {});
  for (size_t i = 0; i < batch_times.size(); ++i) {
    h.t = batch_times[i];
    h.bar.on_train_batch_end(static_cast<int64_t>(i), logs);
  }
  h.bar.on_epoch_end(epoch, logs);
}

// The ETA/step-time part of a 100-step bar after its first step took `seconds`.
std::string first_step_draw(double seconds) {
  Harness h(1, 100, 1);
  h.bar.on_train_begin({});
  h.bar.on_epoch_begin(0, {});
  h.t = seconds;
  h.bar.on_train_batch_end(0, {});
  return h.text();
}

}  // namespace

TEST_CASE("progbar: verbose 1 redraws in place and ends with elapsed time and step time") {
  Harness h(1, 3, 1);
  h.bar.on_train_begin({});
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_train_batch_end(0, {{"accuracy", 0.5}, {"loss", 0.9}});
  h.t = 2;
  h.bar.on_train_batch_end(1, {{"accuracy", 0.75}, {"loss", 0.5}});
  h.t = 3;
  Logs final_logs = {{"accuracy", 0.8721}, {"loss", 0.3563}};
  h.bar.on_train_batch_end(2, final_logs);
  h.bar.on_epoch_end(0, final_logs);
  h.bar.on_train_end({});

  const std::string back(69, '\b');  // every line here is 69 columns wide
  const std::string expected =
      "\r" + BOLD + "1/3" + RST + " " + GRN + "━━━━━━" + RST + GRY + "━━━━━━━━━━━━━━" + RST + " " + BOLD + "2s" + RST +
      " 1s/step - accuracy: 0.5000 - loss: 0.9000" +
      back + "\r" + BOLD + "2/3" + RST + " " + GRN + "━━━━━━━━━━━━━" + RST + GRY + "━━━━━━━" + RST + " " + BOLD + "1s" +
      RST + " 1s/step - accuracy: 0.7500 - loss: 0.5000" +
      // The last batch is not final: it shows a 0s ETA, then epoch end redraws it with the total.
      back + "\r" + BOLD + "3/3" + RST + " " + FULL_BAR + " " + BOLD + "0s" + RST +
      " 1s/step - accuracy: 0.8721 - loss: 0.3563" +
      back + "\r" + BOLD + "3/3" + RST + " " + FULL_BAR + " " + BOLD + "3s" + RST +
      " 1s/step - accuracy: 0.8721 - loss: 0.3563\n";
  CHECK(h.text() == expected);
}

TEST_CASE("progbar: redraws at most every 50 ms but always draws the final line") {
  Harness h(1, 4, 1);
  run_epoch(h, 0, {0.01, 0.02, 0.03, 0.04}, {{"loss", 1.0}});
  const std::string text = h.text();
  CHECK(std::count(text.begin(), text.end(), '\r') == 2);  // first batch + epoch end
  // The first step is left out of the average: (0.04 - 0.01) / 3.
  CHECK(h.last_draw() == BOLD + "4/4" + RST + " " + FULL_BAR + " " + BOLD + "0s" + RST +
                             " 10ms/step - loss: 1.0000\n");
}

TEST_CASE("progbar: ETA and step time formats") {
  auto eta = [](const std::string& e) { return " " + BOLD + e + RST; };
  CHECK(first_step_draw(0.5).find(eta("49s") + " 500ms/step") != std::string::npos);
  CHECK(first_step_draw(1.0).find(eta("1:39") + " 1s/step") != std::string::npos);
  CHECK(first_step_draw(40.0).find(eta("1:06:00") + " 40s/step") != std::string::npos);
  CHECK(first_step_draw(0.0005).find(eta("0s") + " 500us/step") != std::string::npos);
  // A counter is padded to the target's digits.
  CHECK(first_step_draw(1.0).find(BOLD + "  1/100" + RST + " ") != std::string::npos);
}

TEST_CASE("progbar: a shorter line is padded with spaces over the old one") {
  Harness h(1, 3, 1);
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_train_batch_end(0, {{"loss", 12.5}});  // 51 columns
  h.t = 2;
  h.bar.on_train_batch_end(1, {{"loss", 0.5}});  // 50 columns
  CHECK(h.text().substr(h.text().rfind('\b') + 1) ==
        "\r" + BOLD + "2/3" + RST + " " + GRN + "━━━━━━━━━━━━━" + RST + GRY + "━━━━━━━" + RST + " " + BOLD + "1s" +
            RST + " 1s/step - loss: 0.5000 ");
  CHECK(h.text().find(std::string(51, '\b') + "\r") != std::string::npos);
}

TEST_CASE("progbar: keys in first-seen order, val_* from the epoch-end logs") {
  Harness h(1, 1, 1);
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_train_batch_end(0, {{"loss", 0.5}, {"accuracy", 0.25}});
  // Keys first seen at epoch end go after the earlier ones, as in Keras's Progbar; learning_rate,
  // which Keras's callbacks add after fit added val_*, goes last although the Logs sort it before them.
  h.bar.on_epoch_end(0, {{"accuracy", 0.5},
                         {"learning_rate", 0.01},
                         {"loss", 0.25},
                         {"val_accuracy", 0.75},
                         {"val_loss", 0.125}});
  CHECK(h.last_draw() == BOLD + "1/1" + RST + " " + FULL_BAR + " " + BOLD + "1s" + RST +
                             " 1s/step - accuracy: 0.5000 - loss: 0.2500 - val_accuracy: 0.7500 - val_loss: 0.1250"
                             " - learning_rate: 0.0100\n");
}

TEST_CASE("progbar: values that would print as 0.0000 use scientific notation") {
  Harness h(1, 1, 1);
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_epoch_end(0, {{"a", 0.0}, {"b", 5e-4}, {"c", -0.5}, {"d", std::nan("")}, {"e", 1e-3}, {"f", 1234.5}});
  CHECK(h.last_draw().find(" - a: 0.0000e+00 - b: 5.0000e-04 - c: -0.5000 - d: nan - e: 1.0000e-03 - f: 1234.5000\n") !=
        std::string::npos);
}

TEST_CASE("progbar: verbose 2 prints one line per epoch, timed over all steps") {
  Harness h(2, 3, 2);
  h.bar.on_train_begin({});
  Logs logs = {{"accuracy", 0.8721}, {"loss", 0.3563}, {"val_loss", -0.5}};
  run_epoch(h, 0, {0.6, 0.7, 0.8}, logs);
  h.t = 10;
  run_epoch(h, 1, {12, 14, 16}, logs);
  h.bar.on_train_end({});
  // verbose 2 never sees the batches, so step time is elapsed / steps (0.8 / 3), and its
  // threshold is signed: a negative value prints in scientific notation.
  CHECK(h.text() ==
        "Epoch 1/2\n"
        "3/3 - 1s - 267ms/step - accuracy: 0.8721 - loss: 0.3563 - val_loss: -5.0000e-01\n"
        "Epoch 2/2\n"
        "3/3 - 6s - 2s/step - accuracy: 0.8721 - loss: 0.3563 - val_loss: -5.0000e-01\n");
}

TEST_CASE("progbar: verbose 0 prints nothing") {
  Harness h(3, 2, 0);
  h.bar.on_train_begin({});
  for (int e = 0; e < 3; ++e) run_epoch(h, e, {1, 2}, {{"loss", 1.0}});
  h.bar.on_train_end({});
  h.bar.set_test_steps(1);
  h.bar.on_test_begin({});
  h.bar.on_test_batch_end(0, {{"loss", 1.0}});
  h.bar.on_test_end({{"loss", 1.0}});
  CHECK(h.text().empty());
}

TEST_CASE("progbar: the Epoch header appears only when training more than one epoch") {
  Harness one(1, 1, 1);
  run_epoch(one, 0, {1}, {});
  CHECK(one.text().find("Epoch") == std::string::npos);

  Harness two(2, 1, 1);
  run_epoch(two, 0, {1}, {});
  run_epoch(two, 1, {2}, {});
  CHECK(two.text().rfind("Epoch 1/2\n\r", 0) == 0);
  CHECK(two.text().find("\nEpoch 2/2\n\r") != std::string::npos);
}

TEST_CASE("progbar: evaluate has its own bar, silent while inside fit") {
  Harness h(1, 1, 1);
  h.bar.set_test_steps(2);
  h.bar.on_train_begin({});
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_train_batch_end(0, {{"loss", 0.5}});
  const std::string before_validation = h.text();
  h.bar.on_test_begin({});
  h.bar.on_test_batch_end(0, {{"loss", 0.25}});
  h.bar.on_test_end({{"loss", 0.25}});
  CHECK(h.text() == before_validation);
  h.bar.on_epoch_end(0, {{"loss", 0.5}, {"val_loss", 0.25}});
  h.bar.on_train_end({});

  Harness ev(1, 1, 1);
  ev.bar.set_test_steps(2);
  ev.bar.on_test_begin({});
  ev.t = 1;
  ev.bar.on_test_batch_end(0, {{"accuracy", 0.5}, {"loss", 0.75}});
  ev.t = 2;
  ev.bar.on_test_batch_end(1, {{"accuracy", 0.6}, {"loss", 0.7}});
  ev.bar.on_test_end({{"accuracy", 0.6}, {"loss", 0.7}});
  CHECK(ev.last_draw() == BOLD + "2/2" + RST + " " + FULL_BAR + " " + BOLD + "2s" + RST +
                              " 1s/step - accuracy: 0.6000 - loss: 0.7000\n");
}

TEST_CASE("progbar: predict shows a bar without metrics") {
  Harness h(1, 1, 1);
  h.bar.set_test_steps(2);
  h.bar.on_predict_begin({});
  h.t = 1;
  h.bar.on_predict_batch_end(0, {{"outputs", 3.0}});
  h.t = 2;
  h.bar.on_predict_batch_end(1, {{"outputs", 3.0}});
  h.bar.on_predict_end({});
  CHECK(h.last_draw() == BOLD + "2/2" + RST + " " + FULL_BAR + " " + BOLD + "2s" + RST + " 1s/step\n");
  CHECK(h.text().find("outputs") == std::string::npos);
}

TEST_CASE("progbar: an unknown number of steps counts up, then finishes as a full bar") {
  Harness h(1, 0, 1);
  h.bar.on_epoch_begin(0, {});
  h.t = 1;
  h.bar.on_train_batch_end(0, {{"loss", 0.5}});
  CHECK(h.text() == "\r      1/Unknown " + BOLD + "1s" + RST + " 1s/step - loss: 0.5000");
  h.t = 2;
  h.bar.on_train_batch_end(1, {{"loss", 0.5}});
  h.bar.on_epoch_end(0, {{"loss", 0.5}});
  CHECK(h.last_draw() == BOLD + "2/2" + RST + " " + FULL_BAR + " " + BOLD + "2s" + RST + " 1s/step - loss: 0.5000\n");
}

TEST_CASE("History records every epoch-end key and restarts with each fit") {
  tandem::History history;
  history.on_train_begin({});
  history.on_epoch_end(0, {{"loss", 1.0}, {"val_loss", 2.0}});
  history.on_epoch_end(1, {{"loss", 0.5}, {"val_loss", 1.5}, {"learning_rate", 0.1}});
  CHECK(history.epoch == std::vector<int>{0, 1});
  CHECK(history.history["loss"] == std::vector<double>{1.0, 0.5});
  CHECK(history.history["val_loss"] == std::vector<double>{2.0, 1.5});
  CHECK(history.history["learning_rate"] == std::vector<double>{0.1});

  history.on_train_begin({});
  CHECK(history.epoch.empty());
  CHECK(history.history.empty());
}

TEST_CASE("callbacks::Lambda calls the function at each epoch end") {
  std::vector<std::pair<int, double>> seen;
  auto cb = tandem::callbacks::Lambda([&](int epoch, const Logs& logs) { seen.emplace_back(epoch, logs.at("loss")); });
  cb->on_epoch_begin(0, {});
  cb->on_train_batch_end(0, {{"loss", 9.0}});
  cb->on_epoch_end(0, {{"loss", 1.0}});
  cb->on_epoch_end(1, {{"loss", 0.5}});
  CHECK(seen == std::vector<std::pair<int, double>>{{0, 1.0}, {1, 0.5}});
}

TEST_CASE("summary: Keras 3 table for a sequential model") {
  using tandem::detail::SummaryRow;
  std::vector<SummaryRow> rows = {{"flatten", "Flatten", "(None, 784)", 0, {}},
                                  {"dense", "Dense", "(None, 256)", 200960, {}},
                                  {"dense_1", "Dense", "(None, 10)", 2570, {}}};
  tandem::detail::SummaryTotals totals;
  totals.trainable = 203530;
  totals.trainable_bytes = 203530 * 4;
  // Line length 88: Keras asks for 39/31/18 columns, rich adds padding and borders and then
  // trims the 10 excess columns evenly (3, 4, 3).
  const std::string expected = R"TXT(Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ flatten (Flatten)                    │ (None, 784)                 │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense (Dense)                        │ (None, 256)                 │         200,960 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense_1 (Dense)                      │ (None, 10)                  │           2,570 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 203,530 (795.04 KB)
 Trainable params: 203,530 (795.04 KB)
 Non-trainable params: 0 (0.00 B)
)TXT";
  CHECK(tandem::detail::format_summary("sequential", rows, false, totals) == expected);
}

TEST_CASE("summary: functional table wraps long cells and lists optimizer params") {
  using tandem::detail::SummaryRow;
  std::vector<SummaryRow> rows = {
      {"input_layer", "InputLayer", "(None, 32)", 0, {}},
      {"dense", "Dense", "(None, 16)", 528, {"input_layer[0][0]"}},
      {"a_really_long_layer_name_that_overflows", "Dense", "(None, 16)", 272, {"dense[0][0]"}},
      {"add", "Add", "(None, 16)", 0, {"dense[0][0]", "a_really_long_layer_name_that_overflows[0][0]"}}};
  tandem::detail::SummaryTotals totals;
  totals.trainable = 800;
  totals.trainable_bytes = 3200;
  totals.optimizer = 1600;
  totals.optimizer_bytes = 6400;
  // Cells wrap at spaces; a word longer than its cell is cut with an ellipsis.
  const std::string expected = R"TXT(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)      │ (None, 32)                │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense (Dense)                 │ (None, 16)                │             528 │ input_layer[0][0]          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ a_really_long_layer_name_tha… │ (None, 16)                │             272 │ dense[0][0]                │
│ (Dense)                       │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ add (Add)                     │ (None, 16)                │               0 │ dense[0][0],               │
│                               │                           │                 │ a_really_long_layer_name_… │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 2,400 (9.38 KB)
 Trainable params: 800 (3.12 KB)
 Non-trainable params: 0 (0.00 B)
 Optimizer params: 1,600 (6.25 KB)
)TXT";
  CHECK(tandem::detail::format_summary("functional", rows, true, totals) == expected);
}

TEST_CASE("summary: number and size formatting") {
  using tandem::detail::group_thousands;
  using tandem::detail::readable_bytes;
  CHECK(group_thousands(0) == "0");
  CHECK(group_thousands(999) == "999");
  CHECK(group_thousands(1000) == "1,000");
  CHECK(group_thousands(1234567) == "1,234,567");
  CHECK(readable_bytes(0) == "0.00 B");
  CHECK(readable_bytes(1023) == "1023.00 B");
  CHECK(readable_bytes(1024) == "1.00 KB");
  CHECK(readable_bytes(5888) == "5.75 KB");
  CHECK(readable_bytes(3.5 * 1024 * 1024) == "3.50 MB");
  CHECK(readable_bytes(2.0 * 1024 * 1024 * 1024) == "2.00 GB");
}
