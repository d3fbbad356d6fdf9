#include <doctest/doctest.h>
#include <tandem/tandem.h>
