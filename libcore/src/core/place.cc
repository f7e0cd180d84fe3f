// The per-thread default place of ops with no tensor input.
#include "pd/core/place.h"

namespace pd {
namespace {
thread_local Place t_default_place = Place::cpu();
}  // namespace

Place default_place() { return t_default_place; }

DefaultPlaceGuard::DefaultPlaceGuard(Place place) : previous_(t_default_place) { t_default_place = place; }

DefaultPlaceGuard::~DefaultPlaceGuard() { t_default_place = previous_; }

}  // namespace pd
