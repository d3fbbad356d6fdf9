#include "model/registries.h"

#include "backend/kernel_registry.h"
#include "graph/op_registry.h"
#include "layers/config.h"

namespace tandem {

void check_registries() {
  std::vector<std::string> errors = ops::registry().errors();
  for (const auto* more : {&backend::kernels().errors(), &layers::layer_registry().errors()})
    errors.insert(errors.end(), more->begin(), more->end());
  if (!errors.empty()) core::throw_registry_errors(errors);
}

}  // namespace tandem
