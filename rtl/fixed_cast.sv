// fixed_cast: combinational conversion of one signed fixed-point value from
// (IN_WIDTH, IN_FRAC_WIDTH) to (OUT_WIDTH, OUT_FRAC_WIDTH).
//
// Fewer fraction bits: arithmetic right shift, i.e. rounding towards minus
// infinity (floor). More fraction bits: exact left shift. The shifted value is
// then saturated to the two's-complement range of OUT_WIDTH bits,
// [-2^(OUT_WIDTH-1), 2^(OUT_WIDTH-1)-1].
`timescale 1ns / 1ps
module fixed_cast #(
    parameter int IN_WIDTH       = 8,
    parameter int IN_FRAC_WIDTH  = 4,
    parameter int OUT_WIDTH      = 8,
    parameter int OUT_FRAC_WIDTH = 4
) (
    input  logic [ IN_WIDTH-1:0] data_in,
    output logic [OUT_WIDTH-1:0] data_out
);
  localparam int SHIFT = OUT_FRAC_WIDTH - IN_FRAC_WIDTH;
  // Width of the shifted value: the input grows by SHIFT bits on a left shift.
  localparam int MID_WIDTH = (SHIFT > 0) ? IN_WIDTH + SHIFT : IN_WIDTH;
  // Extra headroom so that the saturation test below always has a sign bit
  // above the output range, even when MID_WIDTH < OUT_WIDTH.
  localparam int WIDE = (MID_WIDTH > OUT_WIDTH) ? MID_WIDTH : OUT_WIDTH;

  logic signed [WIDE-1:0] wide_in;
  logic signed [WIDE-1:0] shifted;
  // Bits from the output sign bit upwards: all equal iff the value fits.
  logic [WIDE-OUT_WIDTH:0] upper;

  assign wide_in = WIDE'($signed(data_in));

  generate
    if (SHIFT >= 0) begin : g_left
      assign shifted = wide_in <<< SHIFT;
    end else begin : g_right
      assign shifted = wide_in >>> (-SHIFT);
    end
  endgenerate

  assign upper = shifted[WIDE-1:OUT_WIDTH-1];

  always_comb begin
    if ((&upper) || !(|upper)) data_out = shifted[OUT_WIDTH-1:0];
    else if (shifted[WIDE-1]) data_out = {1'b1, {(OUT_WIDTH - 1) {1'b0}}};
    else data_out = {1'b0, {(OUT_WIDTH - 1) {1'b1}}};
  end
endmodule
