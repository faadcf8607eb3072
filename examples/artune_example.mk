# What both example pairs' Makefiles share: the transport's flags from pkg-config
# and a rule building each of PROGRAMS (set before the include) from its .cc.
OUT ?= build
CXXFLAGS ?= -O2 -g -Wall -Wextra
ARTUNE_CFLAGS := $(shell pkg-config --cflags artune-transport)
ARTUNE_LIBS := $(shell pkg-config --libs artune-transport)
ifeq ($(ARTUNE_LIBS),)
$(error pkg-config does not find artune-transport: set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig)
endif
PROGRAMS := $(addprefix $(OUT)/,$(PROGRAMS))

all: $(PROGRAMS)
$(OUT)/%: %.cc $(HEADERS)
	@mkdir -p $(@D)
	$(CXX) -std=c++20 $(CXXFLAGS) $(ARTUNE_CFLAGS) $< -o $@ $(LDFLAGS) $(ARTUNE_LIBS) $(LDLIBS)
clean:
	rm -f $(PROGRAMS)
.PHONY: all clean
