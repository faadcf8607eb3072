// artune devices [--json]: the verbs devices of this host, like a short ibv_devinfo:
// name, the number the verbs_device knob selects it by, ports with state, link
// layer, active MTU and the non-empty GID entries. Exit code 4 when there is none.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "artune/report/config_text.h"
#include "artune/transport/devices.h"
#include "command.h"

namespace artune::cli {
namespace {

using nlohmann::ordered_json;

ordered_json ToJson(const std::vector<transport::VerbsDevice>& devices) {
  ordered_json out = ordered_json::array();
  for (const transport::VerbsDevice& device : devices) {
    ordered_json entry;
    entry["device"] = device.position;
    entry["name"] = device.name;
    entry["node_guid"] = device.node_guid;
    entry["ports"] = ordered_json::array();
    for (const transport::VerbsPort& port : device.ports) {
      ordered_json p;
      p["port"] = port.number;
      p["state"] = port.state;
      p["link_layer"] = port.link_layer;
      p["active_mtu"] = port.active_mtu;
      p["max_mtu"] = port.max_mtu;
      p["gids"] = ordered_json::array();
      for (const transport::VerbsGid& gid : port.gids) {
        p["gids"].push_back(
            {{"index", gid.index}, {"gid", gid.gid}, {"type", gid.type}, {"netdev", gid.netdev}});
      }
      entry["ports"].push_back(std::move(p));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

void RegisterDevices(CLI::App& root, Context& context) {
  auto* command = root.add_subcommand(
      "devices", "List the verbs (RDMA) devices: ports, state, link layer, active MTU, GIDs");
  command->footer(
      "The number after verbs_device= selects the device in the transport's config "
      "(verbs_device knob; 0 = auto, the first device with an ACTIVE port). Exit code 4 when "
      "this host has no verbs device (no RDMA NIC, or rdma_rxe / ib_uverbs not loaded).");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print the devices as JSON");
  command->callback([&context, json] {
    RunCommand(context, [&]() -> Status {
      ARTUNE_ASSIGN_OR_RETURN(std::vector<transport::VerbsDevice> devices,
                              transport::ListVerbsDevices());
      if (devices.empty()) {
        return Status::Unavailable(
            "no verbs device on this host (no RDMA NIC, or the kernel modules are not loaded: "
            "try `modprobe ib_uverbs`, or Soft-RoCE: `modprobe rdma_rxe && rdma link add rxe0 "
            "type rxe netdev IF`); the transport falls back to fabric = tcp");
      }
      if (*json) {
        std::cout << ToJson(devices).dump(2) << "\n";
      } else {
        report::PrintVerbsDevices(devices, std::cout);
      }
      return Status::Ok();
    });
  });
}

}  // namespace artune::cli
