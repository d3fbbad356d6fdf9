// PNG decoding of every layout against the pixels the files were written from
// (tests/data/datasets/png_formats and png_formats.json, made by tests/data/make_png_formats.py
// from the PNG specification and checked there against PIL): bit depths 1 to 8, gray, gray+alpha,
// RGB, RGBA and palette images, Adam7 interlacing, tRNS, gAMA, all five row filters. Files the
// libspng path reads and files left to libpng (a gAMA chunk to correct for) must give the same
// reading; so must damaged files, which libpng names.
#include <doctest/doctest.h>
#include <tandem/errors.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/image_file.h"

using nlohmann::json;
namespace io = tandem::io;

namespace {
const std::string kFolder = std::string(TANDEM_TEST_DATA) + "/datasets/png_formats/";

json expected() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/datasets/png_formats.json");
  return json::parse(in).at("files");
}

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The expected values in `channels` channels: gray (PIL's "L"), RGB or RGBA.
std::vector<int> want_in(const json& file, int64_t channels) {
  if (channels == 1) return file.at("gray").get<std::vector<int>>();
  const auto rgba = file.at("rgba").get<std::vector<int>>();
  std::vector<int> out;
  for (std::size_t i = 0; i < rgba.size(); ++i)
    if (channels == 4 || i % 4 != 3) out.push_back(rgba[i]);
  return out;
}

int max_diff(const std::vector<uint8_t>& got, const std::vector<int>& want) {
  REQUIRE(got.size() == want.size());
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(int(got[i]) - want[i]));
  return worst;
}
}  // namespace

TEST_CASE("PNG layouts decode to the pixels they were written from, in 1, 3 and 4 channels") {
  io::ImagePixels pixels;  // one buffer through every file and layout, as a decoding thread keeps it
  for (const json& file : expected()) {
    const std::string name = file.at("file");
    const std::string path = kFolder + name;
    CAPTURE(name);
    const int tolerance = file.at("tolerance");
    const io::DecodedImage rgba = io::decode_image(path);
    CHECK(rgba.height == file.at("height").get<int64_t>());
    CHECK(rgba.width == file.at("width").get<int64_t>());
    CHECK(max_diff(rgba.rgba, want_in(file, 4)) <= tolerance);
    const std::vector<uint8_t> bytes = bytes_of(path);
    for (const int64_t channels : {1, 3, 4}) {
      CAPTURE(channels);
      io::decode_image(path, channels, pixels);
      CHECK(pixels.height == rgba.height);
      CHECK(pixels.width == rgba.width);
      CHECK(pixels.channels == channels);
      CHECK(max_diff(pixels.values, want_in(file, channels)) <= tolerance);
      io::decode_image_bytes(name, bytes, channels, pixels);
      CHECK(max_diff(pixels.values, want_in(file, channels)) <= tolerance);
    }
  }
}

TEST_CASE("damaged PNGs: errors name the file, whichever decoder would have read it") {
  const std::string name = "gray8_interlaced.png";
  const std::vector<uint8_t> good = bytes_of(kFolder + name);
  io::ImagePixels pixels;
  // Cut inside the image data, and cut inside the last IDAT's CRC (libspng alone would accept that
  // file: its image data is whole; libpng refuses it).
  const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  const std::vector<uint8_t> no_crc(good.begin(), good.end() - 14);
  // An ancillary chunk (the tEXt after IHDR) whose type is not four letters: libpng refuses it.
  std::vector<uint8_t> bad_type = good;
  const auto text = std::search(bad_type.begin(), bad_type.end(), std::begin("tEXt"), std::end("tEXt") - 1);
  REQUIRE(text != bad_type.end());
  *(text + 1) = '1';
  for (const int64_t channels : {1, 3, 4}) {
    CAPTURE(channels);
    CHECK_THROWS_WITH_AS(io::decode_image_bytes("cut.png", cut, channels, pixels), "image cut.png: damaged PNG: read beyond end of data",
                         tandem::Error);
    CHECK_THROWS_WITH_AS(io::decode_image_bytes("no_crc.png", no_crc, channels, pixels),
                         "image no_crc.png: damaged PNG: read beyond end of data", tandem::Error);
    CHECK_THROWS_WITH_AS(io::decode_image_bytes("bad_type.png", bad_type, channels, pixels),
                         doctest::Contains("image bad_type.png: not a readable PNG: "), tandem::Error);
    CHECK_THROWS_WITH_AS(io::decode_image_bytes("bad_type.png", bad_type, channels, pixels), doctest::Contains("invalid chunk type"),
                         tandem::Error);
  }
  // The buffer is whole again after the errors.
  io::decode_image_bytes(name, good, 1, pixels);
  CHECK(pixels.values.size() == static_cast<std::size_t>(pixels.height * pixels.width));
  CHECK_THROWS_WITH_AS(io::decode_image(kFolder + "missing.png", 1, pixels), doctest::Contains("missing.png: cannot open the file"),
                       tandem::Error);
  CHECK_THROWS_WITH_AS(io::decode_image_bytes("x.png", good, 2, pixels), "image x.png: channels must be 1, 3 or 4, got 2", tandem::Error);
}
