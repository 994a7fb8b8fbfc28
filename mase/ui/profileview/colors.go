package profileview

import "image/color"

// plotGrey draws the roof.
var plotGrey = color.RGBA{0x55, 0x55, 0x55, 0xff}
