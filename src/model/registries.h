// One check over the process's registries of ops, kernels and layer classes. Lookups in a registry
// already fail once any of its registrations failed; this says so up front, for all three at once.
#pragma once

namespace tandem {

// Throws tandem::Error listing every failed registration (a key registered twice names both places).
void check_registries();

}  // namespace tandem
